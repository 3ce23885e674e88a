/* The public header as a C99 translation unit: built with -std=c99 -Wall -Wextra -pedantic -Werror. */
#include "ckjit.h"

int ckjit_header_c99_check(void) {
  ckjit_model_params p;
  ckjit_model_params_default(&p);
  return (int)p.struct_size + (int)CKJIT_OK;
}
