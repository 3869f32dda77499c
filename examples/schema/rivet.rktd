;; rivet.rktd — the scoreboard schema shared by the demo backend, rivetd and companions.
;; Grammar: docs/schema.md. Only what the device-* allowlists name reaches devices.

(record score
  "The score of one game."
  (game-id string)
  (home uint32)
  (away uint32)
  (period period)
  (note (optional string)))

(enum period
  "Which part of the game is being played."
  first second overtime final)

(rpc current-score
  "The current score of a game."
  ((game-id string))
  score)

(rpc refresh-score
  "Asks the backend to fetch the latest score of a game now."
  ((game-id string))
  void)

(event score-changed
  "A game's score changed."
  score)

(state home-team
  "The team the scoreboard follows."
  string)

;; Desktop-only: not allowlisted, so devices cannot call it and `audit-entry`
;; gains no wire contract.
(record audit-entry (at int64) (message string))
(rpc reset-scores () void)

(device-rpcs . (current-score refresh-score))
(device-events . (score-changed))
(device-state . (home-team))

;; Scopes: what the desktop's person can grant a device at pairing. Each names only
;; allowlisted items; a device granted no scope can do nothing.
(scope viewer
  "Watch the score: read it, receive its changes and see which team is followed."
  (rpcs current-score)
  (events score-changed)
  (state-read home-team))

(scope controller
  "Drive the scoreboard: ask for a refresh and choose the team to follow."
  (rpcs refresh-score)
  (state-write home-team))
