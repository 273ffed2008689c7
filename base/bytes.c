/* bytes.c — the array forms of bytes.h: blocks of 32-bit words (θ, the
 * optimiser's state) to and from little-endian bytes. On a little-endian
 * host this is a copy; on a big-endian one each word's bytes are reversed.
 * Written for both with the same loop, so the big-endian path is not a
 * second implementation that only s390x would run. */
#include "base/bytes.h"

void bytes_put_le32_words(unsigned char *dst, const void *src, size_t n)
{
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, s + 4 * i, sizeof u);
        bytes_put_le32(dst + 4 * i, u);
    }
}

void bytes_get_le32_words(void *dst, const unsigned char *src, size_t n)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = bytes_get_le32(src + 4 * i);
        memcpy(d + 4 * i, &u, sizeof u);
    }
}
