#ifndef CQRENCODE_SHIM_H
#define CQRENCODE_SHIM_H
// Umbrella header for libqrencode. No C wrappers are needed: QRCodeKit calls
// QRcode_encodeData and QRcode_free, which Swift imports as they are.
#include <qrencode.h>
#endif
