import RivetGateway
import RivetPairing
import RivetWire
import Testing

/// SplitMix64: a small seeded generator, so every run of a seed replays the same steps. Choices
/// from a set or a dictionary's keys are made from them sorted: their order changes from one
/// process to the next (Swift seeds its hashing per process), which made the counts of rare
/// outcomes vary and a seed fall below its minimum now and then.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What each scope of `gatewaySchemaText` grants, written out independently of the policy.
private let oracleGrants: [String: (rpcs: Set<String>, events: Set<String>, read: Set<String>, write: Set<String>)] = [
    "viewer": (["current-score"], ["score-changed"], ["home-team"], []),
    "controller": (["refresh-score"], [], [], ["home-team"]),
    "volume-reader": ([], [], ["volume"], []),
    "volume-writer": ([], [], [], ["volume"]),
    "idle": ([], [], [], []),
]

/// The test's own account of what must be true, checked against every action the gateway
/// returns.
private struct Model {
    struct Session {
        var device: DeviceID
        var scopes: [String]
        var nextRemote: UInt64 = 1
        /// Requests the device sent that were admitted and await exactly one answer.
        var outstanding: Set<RVT1RequestID> = []
        var queue: [Int] = []
        var written = 0

        func granted(_ kind: RVT1FrameKind, _ name: String) -> Bool {
            scopes.contains { scope in
                guard let grants = oracleGrants[scope] else { return false }
                switch kind {
                case .call: return grants.rpcs.contains(name)
                case .stateRead, .stateChange: return grants.read.contains(name)
                case .stateWrite: return grants.write.contains(name)
                case .event: return grants.events.contains(name)
                default: return false
                }
            }
        }

        mutating func drain(_ bytes: Int) {
            written += min(bytes, queue.reduce(0, +) - written)
            while let first = queue.first, written >= first {
                written -= first
                queue.removeFirst()
            }
            if queue.isEmpty { written = 0 }
        }
    }

    var sessions: [RivetDeviceGatewaySession.ID: Session] = [:]
    /// Host ID → the session and remote ID it was admitted for, while the gateway holds it.
    var hostPending: [RVT1RequestID: (RivetDeviceGatewaySession.ID, RVT1RequestID)] = [:]
    /// Host IDs the backend may still answer although the gateway let go of them.
    var lateHosts: [RVT1RequestID] = []
    /// Host ID → the session and remote ID it was admitted for, kept forever.
    var hostRecord: [RVT1RequestID: (RivetDeviceGatewaySession.ID, RVT1RequestID)] = [:]
    var everyHostID = Set<RVT1RequestID>()
    var highestHostID: UInt64 = 0
    var backendUp = true
    var forwarded = 0
    var answered = 0
    var closuresByReason: [String: Int] = [:]
    var outcomes: [String: Int] = [:]
}

/// What a step asked of the gateway, so its actions can be judged.
private enum Step {
    case request(RivetDeviceGatewaySession.ID, RVT1Frame)
    case cancel(RivetDeviceGatewaySession.ID, RVT1RequestID)
    case other
}

private let limits: RivetDeviceGatewayLimits = {
    do {
        return try RivetDeviceGatewayLimits(
            maxPayloadBytes: 64, maxPendingCallsPerSession: 4, maxSessions: 4, maxQueuedBytesPerSession: 400,
            maxQueuedFramesPerSession: 8)
    } catch {
        Issue.record("limits: \(error)")
        return .default
    }
}()

@Suite struct RivetDeviceGatewayPropertyTests {
    @Test(arguments: [1, 7, 42, 1234, 99_999] as [UInt64])
    func randomInterleavingsKeepTheInvariants(seed: UInt64) throws {
        var random = SplitMix64(state: seed)
        var gateway = RivetDeviceGateway(policy: try gatewayPolicy(), limits: limits)
        var model = Model()
        let devices = try (1...3).map { try device(UInt8($0)) }
        let scopeNames = ["viewer", "controller", "volume-reader", "volume-writer", "idle", "admin"]
        let requestNames = ["current-score", "refresh-score", "reset-scores", "home-team", "volume", "secret", "nope"]

        for stepIndex in 0..<4_000 {
            let roll = Int.random(in: 0..<100, using: &random)
            let open = model.sessions.keys.sorted()
            let pick = open.randomElement(using: &random)
            var step = Step.other
            var actions: [RivetDeviceGatewayAction] = []

            switch roll {
            case 0..<5:
                let owner = devices.randomElement(using: &random)!
                let chosen = Array(scopeNames.shuffled(using: &random).prefix(Int.random(in: 0...6, using: &random) == 0 ? 0 : Int.random(in: 1...3, using: &random)))
                do {
                    let id = try gateway.openSession(device: owner, scopes: try Set(chosen.map { try RivetDeviceScope($0) }))
                    #expect(model.sessions.count < limits.maxSessions, "seed \(seed) step \(stepIndex): session beyond the bound")
                    #expect(model.sessions[id] == nil)
                    model.sessions[id] = Model.Session(device: owner, scopes: chosen)
                } catch let error as RivetDeviceGatewayError {
                    #expect(error == .tooManySessions)
                    #expect(model.sessions.count == limits.maxSessions, "seed \(seed) step \(stepIndex): refused below the bound")
                }
            case 5..<40:
                guard let id = pick, var session = model.sessions[id] else { break }
                let remote: RVT1RequestID
                let choice = Int.random(in: 0..<100, using: &random)
                if choice < 5, let reused = session.outstanding.sorted().randomElement(using: &random) {
                    remote = reused
                } else if choice < 10 {
                    remote = RVT1RequestID(UInt64.random(in: 1...5, using: &random))
                } else {
                    remote = RVT1RequestID(session.nextRemote)
                    session.nextRemote += 1
                    model.sessions[id] = session
                }
                let size = Int.random(in: 0...72, using: &random)
                let payload = [UInt8](repeating: 0x78, count: size)
                // Mostly what the session may use, so that requests reach the backend.
                let kinds = [RVT1FrameKind.call, .stateRead, .stateWrite]
                let usable = kinds.flatMap { kind in requestNames.filter { session.granted(kind, $0) }.map { (kind, $0) } }
                let (kind, name) = (Int.random(in: 0..<4, using: &random) > 0 ? usable.randomElement(using: &random) : nil)
                    ?? (kinds.randomElement(using: &random)!, requestNames.randomElement(using: &random)!)
                let frame = RVT1Frame(kind: kind, requestID: remote, name: name, payload: kind == .stateRead ? [] : payload)
                step = .request(id, frame)
                actions = gateway.receive(frame, from: id)
            case 40..<47:
                guard let id = pick, let session = model.sessions[id] else { break }
                let remote = Bool.random(using: &random)
                    ? session.outstanding.sorted().randomElement(using: &random) ?? 1
                    : RVT1RequestID(UInt64.random(in: 1...40, using: &random))
                step = .cancel(id, remote)
                actions = gateway.receive(.cancel(remote), from: id)
            case 47..<72:
                let live = model.hostPending.keys.sorted()
                let late = model.lateHosts
                guard let host = (Int.random(in: 0..<5, using: &random) == 0 ? late : live).randomElement(using: &random) else { break }
                let prefix = "h=\(host.rawValue);"
                let size = max(prefix.utf8.count, Int.random(in: 0...70, using: &random))
                let payload = Array(prefix.utf8) + [UInt8](repeating: 0x2e, count: size - prefix.utf8.count)
                let frame: RVT1Frame = Int.random(in: 0..<4, using: &random) == 0
                    ? RVT1Frame(kind: .error, requestID: host, name: "app.failed", payload: payload)
                    : .result(host, payload: payload)
                let wasLive = model.hostPending.removeValue(forKey: host) != nil
                model.lateHosts.append(host)
                actions = gateway.receiveFromBackend(frame)
                if !wasLive { #expect(actions == [], "seed \(seed) step \(stepIndex): a late answer was delivered") }
            case 72..<80:
                let isEvent = Bool.random(using: &random)
                let name = isEvent
                    ? ["score-changed", "audit", "nope"].randomElement(using: &random)!
                    : ["home-team", "volume", "secret"].randomElement(using: &random)!
                let payload = [UInt8](repeating: 0x31, count: Int.random(in: 0...70, using: &random))
                let frame = isEvent ? RVT1Frame.event(name: name, payload: payload) : .stateChange(key: name, payload: payload)
                actions = gateway.receiveFromBackend(frame)
                if !model.backendUp {
                    #expect(actions == [], "seed \(seed) step \(stepIndex): a stopped backend's \(frame.kind) was delivered")
                } else if payload.count > limits.maxPayloadBytes {
                    #expect(actions.count == 1)
                    if case .notice = actions.first {} else { Issue.record("seed \(seed) step \(stepIndex): oversized \(frame.kind) not dropped") }
                    actions = []
                } else {
                    let eligible = Set(model.sessions.filter { $0.value.granted(frame.kind, name) }.keys)
                    #expect(actions.recipients.union(actions.closed.keys) == eligible, "seed \(seed) step \(stepIndex): fan-out of \(name)")
                }
            case 80..<93:
                guard let id = pick else { break }
                let bytes = Int.random(in: 0...600, using: &random)
                gateway.outgoingDrained(id, byteCount: bytes)
                model.sessions[id]?.drain(bytes)
            case 93..<94:
                guard let id = pick else { break }
                actions = gateway.closeSession(id, reason: .disconnected)
                #expect(actions.first == .closeSession(id, reason: .disconnected))
            case 94..<95:
                let revoked = devices.randomElement(using: &random)!
                actions = gateway.revoke(device: revoked)
                let expected = Set(model.sessions.filter { $0.value.device == revoked }.keys)
                #expect(Set(actions.closed.keys) == expected)
                #expect(actions.closed.values.allSatisfy { $0 == .revoked })
            case 95..<98:
                if model.backendUp, Int.random(in: 0..<4, using: &random) == 0 {
                    actions = gateway.backendDied()
                    model.backendUp = false
                    model.lateHosts += model.hostPending.keys.sorted()
                    model.hostPending = [:]
                } else if !model.backendUp {
                    gateway.backendRestarted()
                    model.backendUp = true
                }
            default:
                for id in open {
                    let queued = model.sessions[id]?.queue.reduce(0, +) ?? 0
                    gateway.outgoingDrained(id, byteCount: queued)
                    model.sessions[id]?.drain(queued)
                }
            }

            try check(actions, step: step, model: &model, seed: seed, stepIndex: stepIndex)
            try checkState(gateway, model, seed: seed, stepIndex: stepIndex)
        }

        // The backend comes back and answers everything still pending: then every admitted
        // request of every open session has had exactly one answer.
        if !model.backendUp {
            gateway.backendRestarted()
            model.backendUp = true
        }
        for (host, _) in model.hostPending.sorted(by: { $0.key < $1.key }) {
            for id in model.sessions.keys {
                let queued = model.sessions[id]?.queue.reduce(0, +) ?? 0
                gateway.outgoingDrained(id, byteCount: queued)
                model.sessions[id]?.drain(queued)
            }
            model.hostPending[host] = nil
            let actions = gateway.receiveFromBackend(.result(host, payload: Array("h=\(host.rawValue);".utf8)))
            try check(actions, step: .other, model: &model, seed: seed, stepIndex: -1)
        }
        try checkState(gateway, model, seed: seed, stepIndex: -1)
        #expect(model.hostPending.isEmpty)
        #expect(model.sessions.values.allSatisfy { $0.outstanding.isEmpty })
        // The run exercised every rule, not only the easy path.
        #expect(model.forwarded > 200, "seed \(seed): \(model.outcomes)")
        #expect(model.answered > 150)
        for outcome in ["forwarded", "violation", "rivet.request-too-large", "rivet.forbidden", "rivet.busy", "rivet.backend-unavailable"] {
            #expect(model.outcomes[outcome, default: 0] >= 3, "seed \(seed): \(outcome) too rare in \(model.outcomes)")
        }
        for reason in ["rivet.outgoing-queue-full", "rivet.protocol-violation", "rivet.revoked", "rivet.disconnected"] {
            #expect(model.closuresByReason[reason, default: 0] >= 5, "seed \(seed): \(reason) too rare in \(model.closuresByReason)")
        }
    }

    private func check(
        _ actions: [RivetDeviceGatewayAction], step: Step, model: inout Model, seed: UInt64, stepIndex: Int
    ) throws {
        let context = "seed \(seed) step \(stepIndex)"
        var closedNow = Set<RivetDeviceGatewaySession.ID>()
        var closedForQueue = Set<RivetDeviceGatewaySession.ID>()
        var requestOutcome: String?
        var cancelAnswer: String?
        // The state a request or cancel met, before its actions change the model.
        var before: (session: Model.Session, pending: Int, reused: Bool)?
        switch step {
        case .request(let id, let request):
            if let session = model.sessions[id] {
                before = (session, model.hostPending.values.filter { $0.0 == id }.count, session.outstanding.contains(request.requestID))
            }
        case .cancel(let id, let remote):
            if let session = model.sessions[id] {
                before = (session, 0, session.outstanding.contains(remote))
            }
        case .other:
            break
        }
        for action in actions {
            switch action {
            case .send(let frame, let id):
                guard var session = model.sessions[id] else {
                    Issue.record("\(context): frame sent to \(id), which is not open")
                    continue
                }
                session.queue.append(wireSize(frame))
                #expect(session.queue.count <= limits.maxQueuedFramesPerSession, "\(context)")
                #expect(session.queue.reduce(0, +) <= limits.maxQueuedBytesPerSession, "\(context)")
                switch frame.kind {
                case .event, .stateChange:
                    #expect(session.granted(frame.kind, frame.name), "\(context): \(frame.name) delivered to \(id) without a grant")
                case .result, .error:
                    if session.outstanding.remove(frame.requestID) != nil {
                        model.answered += 1
                        if case .cancel(let canceller, let remote) = step, canceller == id, remote == frame.requestID {
                            cancelAnswer = frame.name
                        }
                        if frame.kind == .result {
                            let text = String(decoding: frame.payload, as: UTF8.self)
                            let host = text.dropFirst(2).prefix { $0 != ";" }
                            let hostID = try #require(UInt64(host).map(RVT1RequestID.init(rawValue:)), "\(context): payload \(text)")
                            #expect(model.everyHostID.contains(hostID))
                            // Cross-session check: the answer is the one the backend gave for
                            // this session's own request.
                            #expect(model.hostRecord[hostID]?.0 == id && model.hostRecord[hostID]?.1 == frame.requestID,
                                "\(context): result for host \(hostID) reached \(id) request \(frame.requestID)")
                        }
                    } else if case .request(let requester, let request) = step, requester == id,
                        request.requestID == frame.requestID, frame.kind == .error, requestOutcome == nil
                    {
                        requestOutcome = frame.name
                    } else {
                        Issue.record("\(context): answer \(frame.kind) \(frame.requestID) to \(id) answers nothing outstanding")
                    }
                default:
                    Issue.record("\(context): unexpected \(frame.kind) frame to a device")
                }
                model.sessions[id] = session
            case .sendToBackend(let frame):
                switch frame.kind {
                case .call, .stateRead, .stateWrite:
                    guard case .request(let id, let request) = step else {
                        Issue.record("\(context): request forwarded with no device request")
                        continue
                    }
                    #expect(frame.requestID.rawValue > model.highestHostID, "\(context): host ID \(frame.requestID) reused or out of order")
                    #expect(!model.everyHostID.contains(frame.requestID))
                    #expect(frame.kind == request.kind && frame.name == request.name && frame.payload == request.payload)
                    #expect(model.sessions[id]?.granted(frame.kind, frame.name) == true, "\(context): ungranted \(frame.name) forwarded")
                    model.highestHostID = frame.requestID.rawValue
                    model.everyHostID.insert(frame.requestID)
                    model.hostPending[frame.requestID] = (id, request.requestID)
                    model.hostRecord[frame.requestID] = (id, request.requestID)
                    model.sessions[id]?.outstanding.insert(request.requestID)
                    model.forwarded += 1
                    requestOutcome = "forwarded"
                case .cancel:
                    guard let (owner, remote) = model.hostPending.removeValue(forKey: frame.requestID) else {
                        Issue.record("\(context): cancel for host \(frame.requestID), which is not pending")
                        continue
                    }
                    model.lateHosts.append(frame.requestID)
                    if case .cancel(let id, let cancelled) = step, id == owner, cancelled == remote {
                        continue
                    }
                    #expect(closedNow.contains(owner), "\(context): cancel for host \(frame.requestID) of \(owner), which neither cancelled nor closed")
                default:
                    Issue.record("\(context): unexpected \(frame.kind) frame to the backend")
                }
            case .closeSession(let id, let reason):
                guard let session = model.sessions.removeValue(forKey: id) else {
                    Issue.record("\(context): closed \(id), which is not open")
                    continue
                }
                closedNow.insert(id)
                model.closuresByReason[reason.code, default: 0] += 1
                if reason == .outgoingQueueFull {
                    #expect(!session.queue.isEmpty, "\(context): an empty queue overflowed")
                    closedForQueue.insert(id)
                }
                if case .request(let requester, let request) = step, requester == id, reason == .protocolViolation {
                    #expect(session.outstanding.contains(request.requestID), "\(context): violation without a reused ID")
                    requestOutcome = "violation"
                }
            case .closeBackend, .notice:
                Issue.record("\(context): unexpected \(action)")
            }
        }
        // Whatever a session still owned when it closed is no longer pending.
        for (host, owner) in model.hostPending where closedNow.contains(owner.0) {
            Issue.record("\(context): host \(host) of closed \(owner.0) was not cancelled")
        }
        // Each device request had exactly the outcome the rules give it, in their order.
        if case .request(let id, let request) = step, let before {
            let expected: String
            if before.reused {
                expected = "violation"
            } else if request.payload.count > limits.maxPayloadBytes {
                expected = "rivet.request-too-large"
            } else if !before.session.granted(request.kind, request.name) {
                expected = "rivet.forbidden"
            } else if !model.backendUp {
                expected = "rivet.backend-unavailable"
            } else if before.pending >= limits.maxPendingCallsPerSession {
                expected = "rivet.busy"
            } else {
                expected = "forwarded"
            }
            // An error answer may instead overflow a full queue, which closes the session.
            model.outcomes[expected, default: 0] += 1
            if !(closedForQueue.contains(id) && requestOutcome == nil && expected.hasPrefix("rivet.")) {
                #expect(requestOutcome == expected, "\(context): \(request.kind) \(request.name) (\(request.payload.count) bytes)")
            }
        }
        // A cancel of the session's own outstanding request answers it with rivet.cancelled;
        // any other cancel does nothing.
        if case .cancel(let id, _) = step, let before {
            if before.reused {
                #expect(cancelAnswer == "rivet.cancelled" || closedForQueue.contains(id), "\(context): cancel not answered")
            } else {
                #expect(actions.isEmpty, "\(context): a cancel of nothing had effects: \(actions)")
            }
        }
    }

    private func checkState(_ gateway: RivetDeviceGateway, _ model: Model, seed: UInt64, stepIndex: Int) throws {
        let context = "seed \(seed) step \(stepIndex)"
        #expect(gateway.sessions.map(\.id) == model.sessions.keys.sorted(), "\(context)")
        #expect(gateway.pendingHostCallCount == model.hostPending.count, "\(context)")
        #expect(gateway.isBackendAvailable == model.backendUp)
        for (id, session) in model.sessions {
            let state = try #require(gateway.session(id))
            let owned = model.hostPending.values.filter { $0.0 == id }
            #expect(state.pendingCallCount == owned.count, "\(context)")
            #expect(state.pendingCallCount <= limits.maxPendingCallsPerSession)
            #expect(Set(owned.map(\.1)) == session.outstanding, "\(context): \(id) has an admitted request neither pending nor answered")
            #expect(state.queuedFrameCount == session.queue.count, "\(context)")
            #expect(state.queuedByteCount == session.queue.reduce(0, +), "\(context)")
            #expect(state.queuedFrameCount <= limits.maxQueuedFramesPerSession)
            #expect(state.queuedByteCount <= limits.maxQueuedBytesPerSession)
        }
    }
}
