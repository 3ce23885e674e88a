/* stb_image's implementation from Debian's libstb-dev header, compiled into the image fuzzer so that
 * the decoder itself gets the fuzzer's coverage and ASan's checks (the system libstb.so has neither). */
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
