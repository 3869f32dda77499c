#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
/* The shims below give each variadic curl entry point one fixed C type, so the gcc type-check
   macros in curl/typecheck-gcc.h have nothing left to check. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

/* curl_easy_setopt is variadic: Swift cannot call it, so each argument type gets a fixed shim. */
static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_str(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_ptr(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/* Data callbacks (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION, CURLOPT_READFUNCTION) share
   this signature. */
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

static inline CURLcode ccurl_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/* curl_easy_getinfo is variadic too. */
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_getinfo_str(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

/* CURLMsg.data is an anonymous union; read the result member in C. */
static inline CURLcode ccurl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

#endif
