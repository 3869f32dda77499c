;; The consumer test schema: the scoreboard plus every type shape the generator supports.
;; RivetGeneratorPlugin turns it into RivetGenerated.swift when this target builds. It is public
;; so the stricter access level is what the compiler checks.

(swift-access public)

(record score
  "The score of one game."
  (game-id string)
  (home uint32)
  (away uint32)
  (period period)
  (note (optional string)))

(enum period first second overtime final)

(record everything
  (text string) (flag bool)
  (tiny int8) (small int16) (medium int32) (big int64)
  (utiny uint8) (usmall uint16) (umedium uint32) (ubig uint64)
  (ratio double) (blob bytes)
  (tags (list string)) (maybe (optional int32))
  (nested (list (optional score))) (matrix (list (list int32)))
  (default string) (in bool) (class period))

(record tree (label string) (children (list tree)))

(record unexported-record (x int32))
(enum unexported-enum alpha beta)

(rpc current-score "The current score of a game." ((game-id string)) score)
(rpc refresh-score ((game-id string)) void)
(rpc echo-everything ((value everything)) everything)
(rpc grow-tree ((root tree) (depth uint8)) tree)
(rpc ping () void)
(rpc scores-since ((ids (list string)) (limit (optional uint32))) (list score))
(rpc maybe-score ((game-id string)) (optional score))
(rpc hidden () unexported-record)

(event score-changed score)
(event reset void)
(state home-team string)
(state volume uint8)

(device-rpcs . (current-score refresh-score echo-everything grow-tree ping scores-since maybe-score))
(device-events score-changed reset)
(device-state home-team volume)
