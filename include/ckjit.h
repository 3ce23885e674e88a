/* libckjit — the C API of ckjit, a CPU runtime for Qwen3-VL GGUF models (text model + mmproj).
 *
 * Handles are opaque. Every function returns a ckjit_status (or a value with a documented
 * "nothing" case) and never aborts, exits or throws: bad input of any kind (NULL, a freed or
 * foreign handle, a missing or truncated file, a broken image) gives a status and a message —
 * ckjit_last_error() on the calling thread for every call, and ckjit_model_last_error() /
 * ckjit_session_last_error() for the last error of that handle.
 *
 * Threads: a model is immutable once loaded and may be shared by any number of sessions; each
 * session has its own KV cache and worker threads, and different sessions may run at the same
 * time on different threads. One session is used by one thread at a time.
 *
 * Structs with a struct_size field are filled by their *_default() function first; the library
 * reads only the fields that exist in the caller's version, so they may grow.
 */
#ifndef CKJIT_H
#define CKJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CKJIT_API __attribute__((visibility("default")))
#else
#define CKJIT_API
#endif

#define CKJIT_VERSION_MAJOR 0
#define CKJIT_VERSION_MINOR 3
#define CKJIT_VERSION_PATCH 4

typedef enum ckjit_status {
  CKJIT_OK = 0,
  CKJIT_ERR_INVALID_ARGUMENT = 1, /* NULL where a value is needed, a value out of range */
  CKJIT_ERR_BAD_HANDLE = 2,       /* a handle this library did not give, or already freed */
  CKJIT_ERR_IO = 3,               /* a file that cannot be opened or read */
  CKJIT_ERR_BAD_MODEL = 4,        /* not a valid / supported Qwen3-VL GGUF, or a mismatched pair */
  CKJIT_ERR_BAD_IMAGE = 5,        /* an image that cannot be decoded or used */
  CKJIT_ERR_NO_VISION = 6,        /* an image given to a model loaded without mmproj */
  CKJIT_ERR_CONTEXT_FULL = 7,     /* the prompt does not fit the session's context */
  CKJIT_ERR_CANCELLED = 8,        /* a progress callback asked to stop */
  CKJIT_ERR_BUFFER_TOO_SMALL = 9, /* the output does not fit; the needed size is reported */
  CKJIT_ERR_UNSUPPORTED = 10,     /* this CPU (or the ISA cap) cannot run what is asked */
  CKJIT_ERR_OUT_OF_MEMORY = 11,
  CKJIT_ERR_INTERNAL = 12
} ckjit_status;

typedef struct ckjit_model ckjit_model;
typedef struct ckjit_session ckjit_session;
typedef struct ckjit_image ckjit_image; /* an encoded image (its projector rows), see below */

/* "0.3.4" (the library's, which may be newer than the header's CKJIT_VERSION_*). */
CKJIT_API const char* ckjit_version(void);
/* A short name for a status ("invalid argument"); never NULL. */
CKJIT_API const char* ckjit_status_name(ckjit_status status);
/* The message of the last failed call on this thread ("" if none); valid until the next call. */
CKJIT_API const char* ckjit_last_error(void);

/* The machine, as `ckjit info` prints it: one line, and the full description as JSON. The strings
 * live as long as the process. NULL only if the machine cannot be described (see ckjit_last_error). */
CKJIT_API const char* ckjit_machine_name(void);
CKJIT_API const char* ckjit_machine_json(void);

/* ---- models ---- */

/* Progress of a load, from 0 to 1; return non-zero to cancel it (the load then fails with
 * CKJIT_ERR_CANCELLED and frees what it built). */
typedef int (*ckjit_progress_fn)(float fraction, void* user_data);

typedef struct ckjit_model_params {
  uint32_t struct_size;  /* sizeof(ckjit_model_params) */
  int32_t n_threads;     /* worker threads per session (and for loading); 0: the machine's CPU budget */
  int32_t n_ctx;         /* default context size of the sessions (tokens); 0: 4096 */
  int32_t use_profile;   /* non-zero: use the tuned profile of this machine (`ckjit tune`) if there is one */
  const char* max_isa;   /* NULL, or a cap: "avx2", "avxvnni", "avx512", "amx" */
  ckjit_progress_fn progress;
  void* progress_user_data;
  /* Added in 0.2.x (older callers' smaller struct_size keep the defaults): */
  int32_t n_batch;       /* prefill rows per chunk the kernels are planned for, the sessions' default n_batch; 0: 512 */
  /* With mmproj_path NULL: CKJIT_MMPROJ_NONE (default) text only; CKJIT_MMPROJ_FIND the one
   * mmproj*.gguf beside the model that fits it (none or several: CKJIT_ERR_BAD_MODEL listing what
   * was found); CKJIT_MMPROJ_FIND_IF_ANY the same, but text only when the folder has no mmproj*.gguf. */
  int32_t find_mmproj;
  /* Also added in 0.2.x: how the vision tower multiplies. NULL or "f32" (default): f32 FMA, Q8_0
   * dequantized; "int8": every matrix as Q8_0 (float ones quantized at load) times Q8_0 activation
   * rows: faster, image rows within the tolerance perf/RESULTS.md states. Same bits on every CPU.
   * "bf16": weights and inputs rounded to BF16, AMX-BF16 tiles where granted (fastest there; the
   * bits are that CPU's), elsewhere f32 FMA over the same bf16 values. */
  const char* vision_precision;
  /* Added in 0.3.3: the sessions the caller will open (each of n_ctx, n_batch rows), whose KV caches
   * and activations the memory check before the load counts with the weights, so a plan that
   * cannot fit fails before anything loads, naming every figure. Default 1; 0: the weights alone
   * (also for a caller compiled before 0.3.3, whose struct_size does not reach the field).
   * CKJIT_MEMORY_LIMIT in the environment (bytes, or 512M, 8G, ...) replaces the budget the check
   * compares with (MemAvailable and the cgroup's memory.max). */
  int32_t n_sessions;
  /* Added in 0.3.4, where 0.3.3 had reserved0: the most rows an image gives in those sessions (their
   * image_max_tokens). With a vision tower, the memory check before the load also counts each
   * session's encode of such an image (activations, attention panels, rows), so a plan whose pages
   * cannot fit fails at load, not at the first large page. Default 4096 (llama.cpp's); 0: images
   * not counted (a 0.3.3 caller's reserved0). */
  int32_t image_max_tokens;
} ckjit_model_params;

#define CKJIT_MMPROJ_NONE 0
#define CKJIT_MMPROJ_FIND 1
#define CKJIT_MMPROJ_FIND_IF_ANY 2

/* The defaults, written as far as struct_size (the caller's sizeof) reaches; call ckjit_model_params_default. */
CKJIT_API void ckjit_model_params_init(ckjit_model_params* params, uint32_t struct_size);
static inline void ckjit_model_params_default(ckjit_model_params* params) {
  ckjit_model_params_init(params, (uint32_t)sizeof(*params));
}
/* Loads the text model GGUF and, if mmproj_path is not NULL, its vision projector. params may be
 * NULL (the defaults). On success *out is a new model, else *out is NULL. */
CKJIT_API ckjit_status ckjit_model_load(const char* model_path, const char* mmproj_path, const ckjit_model_params* params,
                                        ckjit_model** out);
/* Frees the model handle; sessions still open keep what they use until they are freed. NULL is a no-op. */
CKJIT_API void ckjit_model_free(ckjit_model* model);
CKJIT_API const char* ckjit_model_last_error(const ckjit_model* model);
CKJIT_API int32_t ckjit_model_n_vocab(const ckjit_model* model);  /* 0 for a bad handle */
CKJIT_API int32_t ckjit_model_has_vision(const ckjit_model* model);
CKJIT_API double ckjit_model_load_ms(const ckjit_model* model);
/* The projector the model was loaded with ("" without one; "" for a bad handle): the path given, or
 * the one found beside the model. Valid while the model lives. */
CKJIT_API const char* ckjit_model_mmproj_path(const ckjit_model* model);

/* Token ids of text (special tokens such as <|im_start|> parsed when parse_special). Writes at most
 * capacity ids; *n_tokens gets the count (also when it does not fit: CKJIT_ERR_BUFFER_TOO_SMALL). */
CKJIT_API ckjit_status ckjit_tokenize(const ckjit_model* model, const char* text, int32_t parse_special, int32_t* tokens,
                                      size_t capacity, size_t* n_tokens);
/* The text of ids (special tokens' text included when special), NUL-terminated in buf; *needed gets
 * the bytes needed including the NUL (CKJIT_ERR_BUFFER_TOO_SMALL when size is less). */
CKJIT_API ckjit_status ckjit_detokenize(const ckjit_model* model, const int32_t* tokens, size_t n_tokens, int32_t special,
                                        char* buf, size_t size, size_t* needed);

/* The vocabulary's begin / end of sequence ids (-1: none, or a bad handle), and whether a token ends
 * generation (EOS and the end-of-turn tokens llama.cpp counts; 0 for a bad handle or id). */
CKJIT_API int32_t ckjit_token_bos(const ckjit_model* model);
CKJIT_API int32_t ckjit_token_eos(const ckjit_model* model);
CKJIT_API int32_t ckjit_token_is_eog(const ckjit_model* model, int32_t token);
/* The bytes of one token (special tokens' text only when special; may be part of a UTF-8 character),
 * NOT NUL-terminated; *n_bytes gets their count (also when size is too small:
 * CKJIT_ERR_BUFFER_TOO_SMALL). */
CKJIT_API ckjit_status ckjit_token_to_piece(const ckjit_model* model, int32_t token, int32_t special, char* buf, size_t size,
                                            size_t* n_bytes);

/* Where an image goes in a prompt's text (mtmd's marker); without one, images go where they were added. */
#define CKJIT_MEDIA_MARKER "<__media__>"

/* ---- sessions ---- */

typedef struct ckjit_session_params {
  uint32_t struct_size;  /* sizeof(ckjit_session_params) */
  int32_t n_ctx;         /* 0: the model's default */
  int32_t n_batch;       /* prefill rows per chunk; 0: the model's n_batch (512 by default) */
  int32_t image_min_tokens, image_max_tokens;  /* rows per image (0: 8 and 4096, llama.cpp's defaults) */
} ckjit_session_params;

CKJIT_API void ckjit_session_params_init(ckjit_session_params* params, uint32_t struct_size);
static inline void ckjit_session_params_default(ckjit_session_params* params) {
  ckjit_session_params_init(params, (uint32_t)sizeof(*params));
}
CKJIT_API ckjit_status ckjit_session_new(ckjit_model* model, const ckjit_session_params* params, ckjit_session** out);
CKJIT_API void ckjit_session_free(ckjit_session* session);
CKJIT_API const char* ckjit_session_last_error(const ckjit_session* session);
/* Forgets the KV cache, the pending prompt and the timings. */
CKJIT_API ckjit_status ckjit_session_reset(ckjit_session* session);

/* Asked before each prefill chunk, each decode step and each layer of an image encode of this
 * session (llama_set_abort_callback); non-zero stops the call with CKJIT_ERR_CANCELLED (in
 * ckjit_generate_batch and the batcher, that session only). The KV rows already computed stay;
 * reset, truncate or use cache_prompt before going on. NULL removes it. Runs on the calling
 * thread (the batcher's engine thread for ckjit_batcher_generate). */
typedef int (*ckjit_abort_fn)(void* user_data);
CKJIT_API ckjit_status ckjit_session_set_abort_callback(ckjit_session* session, ckjit_abort_fn abort, void* user_data);

/* KV rows the session holds (prompt rows and generated tokens); 0 for a bad handle. */
CKJIT_API int64_t ckjit_session_n_past(const ckjit_session* session);
/* Keeps the first n_keep KV rows and forgets the rest (llama_memory_seq_rm from n_keep to the end):
 * the next prompt continues after row n_keep - 1, at the position that followed it. n_keep
 * outside 0..n_past: CKJIT_ERR_INVALID_ARGUMENT. */
CKJIT_API ckjit_status ckjit_session_truncate(ckjit_session* session, int64_t n_keep);

/* ---- KV rows and raw decoding (since 0.3; llama.h's llama_decode, llama_memory_*, llama_state_*) ----
 * A session is one sequence. These calls decode tokens without sampling (the caller's own loop),
 * copy a prefix between sessions, and save and load the rows. */

/* Decodes tokens after what the session holds (text positions), as one batch in n_batch chunks;
 * logits of every position when all_logits, else of the last (ckjit_session_logits_ith). Tokens
 * that do not fit behind the session's rows: CKJIT_ERR_CONTEXT_FULL, nothing decoded. */
CKJIT_API ckjit_status ckjit_session_decode(ckjit_session* session, const int32_t* tokens, size_t n_tokens, int32_t all_logits);
/* One token for each of n sessions (distinct, of one model) in one pass over the weights (a
 * decode step of several sequences): each session's logits are bit for bit those it gets alone. */
CKJIT_API ckjit_status ckjit_decode_together(ckjit_session* const* sessions, const int32_t* tokens, size_t n);
/* Row i of the logits of the session's last ckjit_session_decode / ckjit_decode_together (i < 0
 * counts from the end: -1 is the last); NULL when there is no such row. Valid until the next call. */
CKJIT_API const float* ckjit_session_logits_ith(const ckjit_session* session, int32_t i, int32_t* n_vocab);
/* dst's rows := the first n_rows rows of src (the same model; llama_memory_seq_cp of a prefix): a
 * shared prefix prefilled once, then continued in several sessions. */
CKJIT_API ckjit_status ckjit_session_copy_prefix(ckjit_session* dst, const ckjit_session* src, int64_t n_rows);
/* The session's rows and positions to a file (written whole, then renamed into place), and back
 * into a session of the same model file, KV layout (attention order, the CPU's panel width) and a
 * context that holds them. Another model, a cut or altered file: CKJIT_ERR_INVALID_ARGUMENT with
 * the reason; the session is then empty. A pending prompt is dropped by a load. */
CKJIT_API ckjit_status ckjit_session_save_state(const ckjit_session* session, const char* path);
CKJIT_API ckjit_status ckjit_session_load_state(ckjit_session* session, const char* path);

/* The next prompt, in order: text runs and images (decoded and encoded by the vision tower now, so
 * a broken image fails here). ckjit_generate consumes it. Text may hold "<__media__>" markers to
 * place images; without any, the images go before the text (as llama.cpp's mtmd does). */
CKJIT_API ckjit_status ckjit_session_add_text(ckjit_session* session, const char* text);
CKJIT_API ckjit_status ckjit_session_add_image_file(ckjit_session* session, const char* path);
CKJIT_API ckjit_status ckjit_session_add_image_bytes(ckjit_session* session, const void* data, size_t size);

/* ---- encoded images (since 0.2) ----
 * An image encoded once and added to any number of prompts, of any session on the same model (a
 * server's cache of encoded images). The rows are shared and reference counted: freeing the handle
 * while a session's pending prompt still holds the image is safe. A handle may be read and added
 * from several threads at once. */

/* The width and height an image's header claims (PNG, JPEG, BMP, GIF, TIFF: its first page, or WebP), without decoding its pixels:
 * a caller's pixel limit before any decoding. Not an image or a header too short: CKJIT_ERR_BAD_IMAGE. */
CKJIT_API ckjit_status ckjit_image_info(const void* data, size_t size, int32_t* width, int32_t* height);
/* Whether a JSON Schema is inside structured output's subset (ckjit_generate_params.json_schema),
 * without a model: CKJIT_OK, or CKJIT_ERR_INVALID_ARGUMENT with ckjit_last_error naming the keyword
 * and where it is (a server's check before it answers). Since 0.3.2. */
CKJIT_API ckjit_status ckjit_json_schema_check(const char* schema);
/* The same for a GBNF grammar (ckjit_generate_params.grammar); the error names the line and column. */
CKJIT_API ckjit_status ckjit_grammar_check(const char* grammar);
/* Decodes, preprocesses (the session's image_min_tokens / image_max_tokens) and encodes an image
 * with the session's worker threads. On success *out is a new handle, else NULL. */
CKJIT_API ckjit_status ckjit_image_encode_bytes(ckjit_session* session, const void* data, size_t size, ckjit_image** out);
/* The same with this image's own token limits (rows per image) instead of the session's; 0 keeps
 * the session's value, moved to max_tokens / min_tokens where it would cross the one given.
 * Negative, or max_tokens below min_tokens: CKJIT_ERR_INVALID_ARGUMENT. Since 0.3.3. */
CKJIT_API ckjit_status ckjit_image_encode_bytes_limits(ckjit_session* session, const void* data, size_t size, int32_t min_tokens,
                                                       int32_t max_tokens, ckjit_image** out);
/* Adds an encoded image to the session's pending prompt (as ckjit_session_add_image_bytes does,
 * without encoding). The image must come from a session of the same model. */
CKJIT_API ckjit_status ckjit_session_add_image(ckjit_session* session, const ckjit_image* image);
/* NULL or a handle already freed is a no-op. */
CKJIT_API void ckjit_image_free(ckjit_image* image);
/* The rows the image takes in a prompt, and the bytes its rows hold; 0 for a bad handle. */
CKJIT_API int64_t ckjit_image_n_rows(const ckjit_image* image);
/* The rows an image of width x height would take with these image token limits (0: the defaults,
 * 8 and 4096), without decoding it: a caller's context check before any work (since 0.3.1). 0 for a
 * bad handle, a model without vision or a size that is not an image's. */
CKJIT_API int64_t ckjit_model_image_rows(const ckjit_model* model, int32_t width, int32_t height, int32_t min_tokens,
                                         int32_t max_tokens);
CKJIT_API size_t ckjit_image_bytes(const ckjit_image* image);

/* ---- chat (since 0.2) ---- */

/* 0.3 (soname libckjit.so.0.3): struct_size leads every struct that crosses the API, so that a
 * newer library reads and writes an older caller's smaller struct; ckjit_chat_message and
 * ckjit_timings got it, and the *_default functions pass the caller's sizeof (inline). */
typedef struct ckjit_chat_message {
  uint32_t struct_size; /* sizeof(ckjit_chat_message), the same in every element of an array */
  const char* role;     /* "system", "user", "assistant" or "tool" */
  const char* content; /* may hold "<__media__>" markers where images go */
} ckjit_chat_message;
#define CKJIT_CHAT_MESSAGE(role, content) {sizeof(ckjit_chat_message), (role), (content)}

/* A conversation in the model's chat template (the GGUF's tokenizer.chat_template style),
 * NUL-terminated in buf; with add_generation_prompt the assistant's turn is opened. *needed gets
 * the bytes needed including the NUL (CKJIT_ERR_BUFFER_TOO_SMALL when size is less). Give the
 * result to ckjit_session_add_text and generate with chat = 0. An unknown role or no message:
 * CKJIT_ERR_INVALID_ARGUMENT. */
CKJIT_API ckjit_status ckjit_chat_render(const ckjit_model* model, const ckjit_chat_message* messages, size_t n_messages,
                                         int32_t add_generation_prompt, char* buf, size_t size, size_t* needed);

/* Called with each generated token and the text it completes (whole UTF-8 characters; may be "");
 * return non-zero to stop generating. */
typedef int (*ckjit_token_fn)(int32_t token, const char* text, void* user_data);

typedef struct ckjit_logit_bias {
  int32_t token;
  float bias;
} ckjit_logit_bias;

typedef struct ckjit_generate_params {
  uint32_t struct_size;  /* sizeof(ckjit_generate_params) */
  int32_t n_predict;     /* most tokens to generate (default 256) */
  int32_t chat;          /* non-zero: wrap the prompt in the model's chat template (one user turn) */
  int32_t ignore_eos;
  float temp;            /* 0: greedy (default) */
  uint64_t seed;
  int32_t top_k;         /* default 40 */
  float top_p;           /* default 0.95 */
  float min_p;           /* default 0.05 */
  float repeat_penalty;  /* default 1 (off) */
  int32_t repeat_last_n; /* default 64 */
  ckjit_token_fn on_token;
  void* user_data;
  /* Added in 0.2.x: non-zero: the pending prompt is the whole conversation from its start (as a
   * server's request is), not a continuation. The KV rows of an earlier prompt of this session
   * that it shares a prefix with (the same system prompt, the same image handle) are kept and
   * only the rest is prefilled; the tokens and logits are those of an empty session. Rows the
   * session generated are never reused (decode computes them in another order than prefill).
   * ckjit_session_cached_rows says how many rows were kept. */
  int32_t cache_prompt;
  /* Added in 0.3.1 (llama.cpp's and OpenAI's penalties; an older library refuses a struct this
   * large, so nothing is silently dropped): over the last repeat_last_n tokens, each distinct token
   * seen c times loses c * frequency_penalty + presence_penalty (after repeat_penalty). Default 0. */
  float frequency_penalty;
  float presence_penalty;
  /* n_logit_bias entries (token id, value) added to the logits before anything else (-INFINITY bans
   * a token); ids outside the vocabulary: CKJIT_ERR_INVALID_ARGUMENT. The array is read during the
   * call only. */
  const struct ckjit_logit_bias* logit_bias;
  size_t n_logit_bias;
  /* Added in 0.3.2 (structured output): a JSON Schema (UTF-8 JSON text; NULL: free text). Every
   * generated token keeps the text a prefix of a JSON value the schema admits, and generation ends
   * only where the value is complete (or at n_predict / a full context: check the stop reason).
   * The subset: type, properties, required, additionalProperties, items, minItems, maxItems,
   * minLength, maxLength, enum, const, anyOf, local $ref; {"type":"object"} is any object. Anything
   * else: CKJIT_ERR_INVALID_ARGUMENT naming the keyword. Read during the call only. */
  const char* json_schema;
  /* Also 0.3.2: a GBNF grammar (llama.cpp's format, regular: no recursive rules; starts at root),
   * the same way; NULL: none. Not with json_schema (CKJIT_ERR_INVALID_ARGUMENT). */
  const char* grammar;
} ckjit_generate_params;

CKJIT_API void ckjit_generate_params_init(ckjit_generate_params* params, uint32_t struct_size);
static inline void ckjit_generate_params_default(ckjit_generate_params* params) {
  ckjit_generate_params_init(params, (uint32_t)sizeof(*params));
}
/* Prefills the pending prompt and generates. tokens (may be NULL when capacity is 0) receives up to
 * capacity generated ids; *n_generated (may be NULL) the number generated. A prompt that does not
 * fit the context: CKJIT_ERR_CONTEXT_FULL. */
CKJIT_API ckjit_status ckjit_generate(ckjit_session* session, const ckjit_generate_params* params, int32_t* tokens,
                                      size_t capacity, size_t* n_generated);

/* Generates the pending prompts of n sessions together (continuous batching: each prompt is
 * prefilled in chunks between the others' decode steps, and one decode step serves every session
 * that is generating, reading the weights once). Each session gets exactly the tokens, text and
 * logits ckjit_generate would give it alone, whatever else is in the batch. The sessions must be
 * distinct and of one model. params: NULL (defaults for all) or n pointers (NULL entries:
 * defaults). status and n_generated (each may be NULL): n entries, every session's outcome and
 * count of generated tokens (the tokens reach each session's on_token). A session that cannot
 * start (empty prompt, a prompt longer than its context) gets its status and error and the others
 * run. Returns CKJIT_OK when every session succeeded, else the first failing session's status.
 * A call refused as a whole (n 0, a NULL or dead handle, a session twice, sessions of different
 * models) runs nothing and leaves the prompts pending; otherwise every pending prompt is spent. */
CKJIT_API ckjit_status ckjit_generate_batch(ckjit_session* const* sessions, const ckjit_generate_params* const* params, size_t n,
                                            ckjit_status* status, size_t* n_generated);

/* A continuous-batching engine over one model, for callers on several threads (a server's
 * requests): each ckjit_batcher_generate call blocks its thread while one engine thread runs every
 * call together — a new call's prompt is prefilled in chunks between the others' decode steps, and
 * each decode step serves every call at once, reading the weights once. Each call gets exactly the
 * tokens ckjit_generate would give its session alone. At most max_sessions calls run at once (more
 * wait, in arrival order). n_threads: the engine's decode workers (0: the model's). The callbacks
 * (on_token) run on the engine thread. */
typedef struct ckjit_batcher ckjit_batcher;
CKJIT_API ckjit_status ckjit_batcher_new(ckjit_model* model, int32_t max_sessions, int32_t n_threads, ckjit_batcher** out);
/* Call only once no ckjit_batcher_generate on it is running. NULL and dead handles are ignored. */
CKJIT_API void ckjit_batcher_free(ckjit_batcher* batcher);
/* As ckjit_generate, through the batcher; session: of the batcher's model, used by no other call meanwhile. */
CKJIT_API ckjit_status ckjit_batcher_generate(ckjit_batcher* batcher, ckjit_session* session, const ckjit_generate_params* params,
                                              int32_t* tokens, size_t capacity, size_t* n_generated);

/* Prompt rows the last generation kept from the session's cache instead of prefilling (cache_prompt);
 * 0 for a bad handle. ckjit_timings' n_prompt counts only the rows prefilled. */
CKJIT_API int64_t ckjit_session_cached_rows(const ckjit_session* session);

/* Why the session's last generation ended (since 0.3.1). */
typedef enum ckjit_stop_reason {
  CKJIT_STOP_NONE = 0,              /* no generation yet, or the last call failed before generating */
  CKJIT_STOP_LENGTH = 1,            /* n_predict tokens were generated */
  CKJIT_STOP_END_OF_GENERATION = 2, /* an end-of-generation token, the last of the generated ids */
  CKJIT_STOP_CALLBACK = 3,          /* on_token returned non-zero */
  CKJIT_STOP_CONTEXT_FULL = 4,      /* the context filled; the tokens so far stand (CKJIT_OK) */
  CKJIT_STOP_CANCELLED = 5          /* the abort callback (CKJIT_ERR_CANCELLED) */
} ckjit_stop_reason;
CKJIT_API ckjit_stop_reason ckjit_session_stop_reason(const ckjit_session* session);  /* NONE for a bad handle */

/* The logits that chose the last generated token (n_vocab floats), or NULL before any; valid until
 * the session's next call. */
CKJIT_API const float* ckjit_session_logits(const ckjit_session* session, int32_t* n_vocab);

typedef struct ckjit_timings {
  uint32_t struct_size;    /* the caller sets sizeof(ckjit_timings) (ckjit_timings_init) */
  double load_ms;          /* the model's load (files, repack, JIT) */
  double encode_ms;        /* images through the vision tower */
  double prefill_ms;       /* all prompt rows */
  double image_prefill_ms; /* of which image rows */
  double decode_ms;
  int64_t n_prompt, n_image_rows, n_decoded;
} ckjit_timings;

/* Zeros t and sets its struct_size (the caller's sizeof): call before ckjit_session_timings. */
static inline void ckjit_timings_init(ckjit_timings* t) {
  unsigned char* b = (unsigned char*)t;
  for (size_t i = 0; i < sizeof(*t); ++i) b[i] = 0;
  t->struct_size = (uint32_t)sizeof(*t);
}

/* Totals since the session was created or reset, as far as out->struct_size reaches (a struct_size
 * of 0 or larger than this library's: CKJIT_ERR_INVALID_ARGUMENT). */
CKJIT_API ckjit_status ckjit_session_timings(const ckjit_session* session, ckjit_timings* out);

#ifdef __cplusplus
}
#endif

#endif /* CKJIT_H */
