/* read_page: reads a page image with a Qwen3-VL GGUF pair through libckjit (include/ckjit.h only).
 *
 *   read_page MODEL.gguf MMPROJ.gguf PAGE.png [PROMPT]
 *
 * Build: cmake -S examples -B b -DCMAKE_PREFIX_PATH=<prefix>, or
 *        cc -std=c99 read_page.c $(pkg-config --cflags --libs ckjit)
 */
#include <stdio.h>

#include <ckjit.h>

static int on_progress(float fraction, void* user_data) {
  int* last = user_data; /* the last step printed: one line per 10% */
  int percent = (int)(fraction * 10.0f) * 10;
  if (percent != *last) fprintf(stderr, "loading: %d%%\n", percent), *last = percent;
  return 0; /* never cancel */
}

static int on_token(int32_t token, const char* text, void* user_data) {
  (void)token;
  (void)user_data;
  fputs(text, stdout);
  fflush(stdout);
  return 0; /* keep generating */
}

/* Says what failed and why; `message` is the handle's own message when there is a handle. */
static int fail(const char* what, ckjit_status st, const char* message) {
  fprintf(stderr, "read_page: %s: %s: %s\n", what, ckjit_status_name(st), message);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: %s MODEL.gguf MMPROJ.gguf PAGE.png [PROMPT]\n", argv[0]);
    return 2;
  }
  const char* prompt = argc == 5 ? argv[4] : "Read the text on this page.";

  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  int last_percent = -1;
  mp.progress = on_progress;
  mp.progress_user_data = &last_percent;
  ckjit_model* model = NULL;
  ckjit_status st = ckjit_model_load(argv[1], argv[2], &mp, &model);
  if (st != CKJIT_OK) return fail("load", st, ckjit_last_error());

  ckjit_session* session = NULL;
  st = ckjit_session_new(model, NULL, &session);
  if (st != CKJIT_OK) {
    int rc = fail("session", st, ckjit_last_error());
    ckjit_model_free(model);
    return rc;
  }

  const char* what = "image";
  st = ckjit_session_add_image_file(session, argv[3]);
  if (st == CKJIT_OK) what = "prompt", st = ckjit_session_add_text(session, prompt);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.chat = 1;
  gp.on_token = on_token;
  size_t n_generated = 0;
  if (st == CKJIT_OK) what = "generate", st = ckjit_generate(session, &gp, NULL, 0, &n_generated);
  ckjit_timings t;
  ckjit_timings_init(&t);
  if (st == CKJIT_OK) what = "timings", st = ckjit_session_timings(session, &t);
  int rc = 0;
  if (st != CKJIT_OK) {
    rc = fail(what, st, ckjit_session_last_error(session));
  } else {
    printf("\n");
    printf("timings: load %.1f ms, encode %.1f ms, prefill %.1f ms (%lld tokens, %lld image rows), "
           "decode %.1f ms (%lld tokens)\n",
           t.load_ms, t.encode_ms, t.prefill_ms, (long long)t.n_prompt, (long long)t.n_image_rows, t.decode_ms,
           (long long)t.n_decoded);
  }
  ckjit_session_free(session);
  ckjit_model_free(model);
  return rc;
}
