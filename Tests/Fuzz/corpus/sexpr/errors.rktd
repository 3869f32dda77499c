(record node (next (optional node)))
(rpc close () void)
(device-rpcs close missing)
