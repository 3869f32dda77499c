#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/bn.h>
#include <openssl/objects.h>

// Shims only for what Swift cannot import: C variadics and function-like macros.

// EVP_PKEY_Q_keygen is variadic; this fixes the "EC" form, which takes one curve name.
static inline EVP_PKEY *copenssl_ec_keygen(const char *curve) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
}

// SSL_CTX_set_min_proto_version / SSL_CTX_set_max_proto_version / SSL_CTX_set_mode are macros.
static inline int copenssl_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int copenssl_ssl_ctx_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long copenssl_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

// OPENSSL_free is a macro (it passes __FILE__ and __LINE__ to CRYPTO_free).
static inline void copenssl_free(void *pointer) { OPENSSL_free(pointer); }

// BIO retry-flag helpers are macros; a custom BIO needs them to signal EAGAIN to libssl.
static inline void copenssl_bio_set_retry_read(BIO *b) { BIO_set_retry_read(b); }
static inline void copenssl_bio_set_retry_write(BIO *b) { BIO_set_retry_write(b); }
static inline void copenssl_bio_clear_retry_flags(BIO *b) { BIO_clear_retry_flags(b); }

#endif
