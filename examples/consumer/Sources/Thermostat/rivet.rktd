;; rivet.rktd — the consumer example's own schema: a thermostat a device can read and set.
;; Grammar: docs/schema.md. rivet.lock beside it is its committed device surface: the build
;; fails when this file breaks it.

(swift-access public)

(enum mode
  "What the thermostat does."
  off heat cool)

(record reading
  "One temperature reading."
  (room string)
  (tenths-celsius int32)
  (mode mode))

(rpc read-temperature
  "The latest reading of a room."
  ((room string))
  reading)

(rpc set-target
  "Sets a room's target temperature, in tenths of a degree Celsius."
  ((room string) (tenths-celsius int32))
  void)

(event target-reached
  "A room reached its target."
  reading)

(state mode
  "What the thermostat does."
  mode)

(device-rpcs read-temperature set-target)
(device-events target-reached)
(device-state mode)

;; What the desktop's person grants a companion at pairing (rivet-pair --open --qr --scope
;; household): it reads the rooms and hears when a target is reached; setting targets stays
;; with the desktop.
(scope household
  "Read the rooms' temperatures and the mode, and hear when a target is reached."
  (rpcs read-temperature)
  (events target-reached)
  (state-read mode))
