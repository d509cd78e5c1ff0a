/* SHA-256 and HMAC-SHA-256 (core/hmac.c) against published test vectors: FIPS 180-2's
 * SHA-256 examples and every test case of RFC 4231; hex and the constant-time comparison. */
#include <string.h>

#include "core/hmac.h"
#include "tests/check.h"

static int hex_is(const unsigned char *got, size_t len, const char *want) {
    char buf[2 * SHA256_LEN + 1];
    hex_encode(got, len, buf);
    return strcmp(buf, want) == 0;
}

static void check_sha(const char *msg, const char *want) {
    unsigned char out[SHA256_LEN];
    sha256(msg, strlen(msg), out);
    CHECK(hex_is(out, SHA256_LEN, want));
}

static void check_hmac(const unsigned char *key, size_t keylen, const void *data, size_t len,
                       const char *want, size_t outlen) {
    unsigned char out[SHA256_LEN];
    hmac_sha256(key, keylen, data, len, out);
    CHECK(hex_is(out, outlen, want));
}

int main(void) {
    /* FIPS 180-2, appendix B, and the empty message */
    check_sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    {
        /* a million 'a', fed in uneven pieces (the buffering across blocks) */
        static char a[1000];
        memset(a, 'a', sizeof a);
        struct sha256 s;
        unsigned char out[SHA256_LEN];
        sha256_init(&s);
        size_t left = 1000000, step = 1;
        while (left) {
            size_t take = step < left ? step : left;
            sha256_update(&s, a, take);
            left -= take;
            step = step % 977 + 13; /* at most 989 */
        }
        sha256_final(&s, out);
        CHECK(hex_is(out, SHA256_LEN,
                     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    }

    /* RFC 4231, test cases 1 to 7 (HMAC-SHA-256) */
    unsigned char key[131], data[200];
    memset(key, 0x0b, 20);
    check_hmac(key, 20, "Hi There", 8,
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", SHA256_LEN);
    check_hmac((const unsigned char *)"Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", SHA256_LEN);
    memset(key, 0xaa, 20);
    memset(data, 0xdd, 50);
    check_hmac(key, 20, data, 50,
               "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", SHA256_LEN);
    for (int i = 0; i < 25; i++) key[i] = (unsigned char)(i + 1);
    memset(data, 0xcd, 50);
    check_hmac(key, 25, data, 50,
               "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", SHA256_LEN);
    memset(key, 0x0c, 20);
    check_hmac(key, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b", 16);
    memset(key, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(key, 131, t6, strlen(t6),
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", SHA256_LEN);
    const char *t7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the "
                     "HMAC algorithm.";
    check_hmac(key, 131, t7, strlen(t7),
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", SHA256_LEN);

    /* hex: exact length, either case; anything else refused */
    unsigned char b[4];
    CHECK(hex_decode("00fFa5", b, 3) == 0 && b[0] == 0 && b[1] == 0xff && b[2] == 0xa5);
    CHECK(hex_decode("00ff", b, 3) == -1);
    CHECK(hex_decode("00ffa5a", b, 3) == -1);
    CHECK(hex_decode("00fga5", b, 3) == -1);
    CHECK(hex_decode("", b, 0) == 0);

    /* the comparison */
    CHECK(equal_ct("abcd", "abcd", 4));
    CHECK(!equal_ct("abcd", "abce", 4));
    CHECK(!equal_ct("xbcd", "abcd", 4));
    CHECK(equal_ct("", "", 0));
    unsigned char w[8];
    memset(w, 0x5a, sizeof w);
    wipe(w, sizeof w);
    CHECK(w[0] == 0 && w[7] == 0);
    return check_report();
}
