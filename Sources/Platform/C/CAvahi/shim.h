#ifndef CAVAHI_SHIM_H
#define CAVAHI_SHIM_H
// Umbrella header for libavahi-client. No C wrappers are needed: every variadic entry point
// has an importable list-based twin that AvahiKit uses instead
// (avahi_entry_group_add_service -> avahi_entry_group_add_service_strlst,
//  avahi_string_list_new -> avahi_string_list_add_arbitrary, one entry at a time).
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#endif
