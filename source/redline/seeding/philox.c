/* Philox4x32-10's rounds over many counters, in place: redline.seeding.philox.philox_pairs in C.
 *
 * redline.native compiles this file on first use. The words are held in pairs, as the numpy path holds them:
 * a = (c0, c2) and b = (c1, c3), each a (2, m) uint32 array; keys holds the 10 round keys (k0, k1) in order.
 * One round: (c0, c1, c2, c3) <- (hi(c2 * M1) ^ c1 ^ k0, lo(c2 * M1), hi(c0 * M0) ^ c3 ^ k1, lo(c0 * M0)).
 */
#include <stdint.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u

void redline_philox_pairs(uint32_t* a, uint32_t* b, int64_t m, const uint32_t* keys) {
  for (int64_t j = 0; j < m; j++) {
    uint32_t c0 = a[j], c2 = a[m + j], c1 = b[j], c3 = b[m + j];
    for (int r = 0; r < 10; r++) {
      uint64_t p0 = (uint64_t)c0 * PHILOX_M0;
      uint64_t p1 = (uint64_t)c2 * PHILOX_M1;
      uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ keys[2 * r];
      uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ keys[2 * r + 1];
      c1 = (uint32_t)p1;
      c3 = (uint32_t)p0;
      c0 = n0;
      c2 = n2;
    }
    a[j] = c0;
    a[m + j] = c2;
    b[j] = c1;
    b[m + j] = c3;
  }
}
