#!/usr/bin/env python3
"""Consumes the stream at URL with sseclient-py and prints the number of events."""
import sys, urllib.request
import sseclient

response = urllib.request.urlopen(sys.argv[1])
count = 0
for _ in sseclient.SSEClient(response).events():
    count += 1
print(count)
