/* read_pages_together: reads several page images at once with a Qwen3-VL GGUF pair through
 * libckjit (include/ckjit.h only): one session per page, every page's image and prompt added, then
 * ckjit_generate_batch generates all of them together (one decode pass over the weights serves
 * every page; each page's text is what it would be alone).
 *
 *   read_pages_together MODEL.gguf MMPROJ.gguf PAGE.png [PAGE.png ...]
 *
 * Build: as read_page.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckjit.h>

#define MAX_PAGES 16
#define MAX_TEXT 4096

struct page_text {
  char text[MAX_TEXT];
  size_t len;
};

static int on_token(int32_t token, const char* text, void* user_data) {
  struct page_text* out = user_data;
  size_t n = strlen(text);
  (void)token;
  if (out->len + n < MAX_TEXT) memcpy(out->text + out->len, text, n + 1), out->len += n;
  return 0; /* keep generating */
}

int main(int argc, char** argv) {
  if (argc < 4 || argc - 3 > MAX_PAGES) {
    fprintf(stderr, "usage: %s MODEL.gguf MMPROJ.gguf PAGE.png [PAGE.png ...] (at most %d pages)\n", argv[0], MAX_PAGES);
    return 2;
  }
  const size_t n = (size_t)(argc - 3);
  ckjit_model* model = NULL;
  ckjit_status st = ckjit_model_load(argv[1], argv[2], NULL, &model);
  if (st != CKJIT_OK) {
    fprintf(stderr, "read_pages_together: load: %s: %s\n", ckjit_status_name(st), ckjit_last_error());
    return 1;
  }
  ckjit_session* sessions[MAX_PAGES] = {0};
  ckjit_generate_params params[MAX_PAGES];
  const ckjit_generate_params* param_ptrs[MAX_PAGES];
  struct page_text* texts = calloc(n, sizeof *texts);
  ckjit_status status[MAX_PAGES];
  size_t n_generated[MAX_PAGES];
  int rc = texts ? 0 : 1;
  for (size_t i = 0; i < n && rc == 0; ++i) {
    st = ckjit_session_new(model, NULL, &sessions[i]);
    if (st == CKJIT_OK) st = ckjit_session_add_image_file(sessions[i], argv[3 + i]);
    if (st == CKJIT_OK) st = ckjit_session_add_text(sessions[i], "Read the text on this page.");
    if (st != CKJIT_OK) {
      fprintf(stderr, "read_pages_together: page %s: %s: %s\n", argv[3 + i], ckjit_status_name(st),
              sessions[i] ? ckjit_session_last_error(sessions[i]) : ckjit_last_error());
      rc = 1;
    }
    ckjit_generate_params_default(&params[i]);
    params[i].chat = 1;
    params[i].n_predict = 64;
    params[i].on_token = on_token;
    params[i].user_data = &texts[i];
    param_ptrs[i] = &params[i];
  }
  if (rc == 0) {
    st = ckjit_generate_batch(sessions, param_ptrs, n, status, n_generated);
    for (size_t i = 0; i < n; ++i) {
      if (status[i] != CKJIT_OK) {
        fprintf(stderr, "read_pages_together: page %s: %s: %s\n", argv[3 + i], ckjit_status_name(status[i]),
                ckjit_session_last_error(sessions[i]));
        rc = 1;
        continue;
      }
      ckjit_timings t;
      ckjit_timings_init(&t);
      ckjit_session_timings(sessions[i], &t);
      printf("page %s: %zu tokens: %s\n", argv[3 + i], n_generated[i], texts[i].text);
      printf("timings: encode %.1f ms, prefill %.1f ms (%lld tokens), decode %.1f ms (%lld tokens)\n", t.encode_ms,
             t.prefill_ms, (long long)t.n_prompt, t.decode_ms, (long long)t.n_decoded);
    }
    if (st != CKJIT_OK) rc = 1;
  }
  for (size_t i = 0; i < n; ++i) ckjit_session_free(sessions[i]);
  free(texts);
  ckjit_model_free(model);
  return rc;
}
