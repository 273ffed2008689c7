/* bytes.h — little-endian (and the IDX format's big-endian) loads and stores:
 * the one way every file format and hash of lockstep turns numbers into
 * bytes and back, byte by byte, so the same files and hashes come out on a
 * little-endian and a big-endian host (docs/contract.md, "Instruction sets
 * and byte orders"; make check-cross runs them on s390x). A format never
 * memcpy's a host integer or float into a file or a hash input. The shifts
 * compile to one plain load or store on a little-endian host and to a
 * byte-reversed one on a big-endian host. */
#ifndef LS_BYTES_H
#define LS_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void bytes_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xffu);
    p[1] = (unsigned char)((v >> 8) & 0xffu);
    p[2] = (unsigned char)((v >> 16) & 0xffu);
    p[3] = (unsigned char)((v >> 24) & 0xffu);
}

static inline void bytes_put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((v >> (8 * i)) & 0xffu);
}

static inline uint32_t bytes_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t bytes_get_le64(const unsigned char *p)
{
    return (uint64_t)bytes_get_le32(p) | (uint64_t)bytes_get_le32(p + 4) << 32;
}

/* The IDX format (engine/data/idx.c) is big-endian by definition. */
static inline uint32_t bytes_get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The bits of a float and back (no aliasing, no conversion). */
static inline uint32_t bytes_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float bytes_f32_of_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* n 32-bit words (floats, or any block of 4-byte words) as 4n little-endian
 * bytes, and back. src and dst may not overlap. */
void bytes_put_le32_words(unsigned char *dst, const void *src, size_t n);
void bytes_get_le32_words(void *dst, const unsigned char *src, size_t n);

#endif
