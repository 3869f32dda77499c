import Foundation
import RivetDevice
import RivetWire
import Testing

enum ScoreError: Error {
    case unknownGame(String)
    case secret(String)
}

struct UnregisteredError: Error, CustomStringConvertible {
    var description: String { "database password is hunter2" }
}

@Suite struct RouterRegistrationTests {
    @Test func duplicateRouteIsRejected() async throws {
        let router = RivetDeviceRouter()
        try await router.register(Echo.self) { EchoReply(text: $0.text) }
        await #expect(throws: RivetDeviceError.duplicateRoute) {
            try await router.register(Echo.self) { _ in EchoReply(text: "second") }
        }
        #expect(await router.routes == ["echo"])
    }

    struct Route255: RivetDeviceRequest {
        typealias Response = RivetDeviceUnit
        static let route = RivetRoute(String(repeating: "r", count: 255))
    }

    struct Route256: RivetDeviceRequest {
        typealias Response = RivetDeviceUnit
        static let route = RivetRoute(String(repeating: "r", count: 256))
    }

    struct RouteWithSpace: RivetDeviceRequest {
        typealias Response = RivetDeviceUnit
        static let route: RivetRoute = "current score"
    }

    struct EmptyRoute: RivetDeviceRequest {
        typealias Response = RivetDeviceUnit
        static let route: RivetRoute = ""
    }

    @Test func invalidRoutesAreRejectedAtRegistration() async throws {
        let router = RivetDeviceRouter()
        let empty = await #expect(throws: RivetDeviceError.invalidRoute) {
            try await router.register(EmptyRoute.self) { _ in RivetDeviceUnit() }
        }
        #expect(empty?.message == "route \"\" is invalid: it is empty")
        await #expect(throws: RivetDeviceError.invalidRoute) {
            try await router.register(RouteWithSpace.self) { _ in RivetDeviceUnit() }
        }
        await #expect(throws: RivetDeviceError.invalidRoute) {
            try await router.register(Route256.self) { _ in RivetDeviceUnit() }
        }
        try await router.register(Route255.self) { _ in RivetDeviceUnit() }
        #expect(await router.routes.count == 1)
    }

    @Test func duplicateAndInvalidStateKeysAreRejected() async throws {
        let router = RivetDeviceRouter()
        try await router.registerState(RivetStateKey<String>("home-team"), read: { "Lions" })
        await #expect(throws: RivetDeviceError.duplicateRoute) {
            try await router.registerState(RivetStateKey<String>("home-team"), read: { "Tigers" })
        }
        await #expect(throws: RivetDeviceError.invalidRoute) {
            try await router.registerState(RivetStateKey<String>("home team"), read: { "x" })
        }
        #expect(await router.stateKeys == ["home-team"])
    }

    @Test func duplicateErrorRegistrationIsRejected() async throws {
        let router = RivetDeviceRouter()
        try await router.registerError(ScoreError.self) { _ in RivetRemoteError(code: "a", message: "b") }
        await #expect(throws: RivetDeviceError.duplicateErrorRegistration) {
            try await router.registerError(ScoreError.self) { _ in RivetRemoteError(code: "a", message: "b") }
        }
    }

    @Test func configurationRejectsOutOfRangeBounds() {
        #expect(throws: RivetDeviceError.invalidConfiguration) { try RivetDeviceConfiguration(maxRequestBytes: -1) }
        #expect(throws: RivetDeviceError.invalidConfiguration) {
            try RivetDeviceConfiguration(maxResponseBytes: Int(UInt32.max) + 1)
        }
        #expect(throws: RivetDeviceError.invalidConfiguration) { try RivetDeviceConfiguration(maxPendingCalls: 0) }
        #expect(throws: RivetDeviceError.invalidConfiguration) { try RivetDeviceConfiguration(defaultTimeout: .zero) }
        #expect(throws: RivetDeviceError.invalidConfiguration) { try RivetDeviceConfiguration(maxBufferedEvents: 0) }
        #expect(RivetDeviceConfiguration.default.maxRequestBytes == 524_288)
        #expect(RivetDeviceConfiguration.default.maxResponseBytes == 524_288)
        #expect(RivetDeviceConfiguration.default.maxPendingCalls == 64)
    }
}

@Suite struct RouterDispatchTests {
    func call(_ router: RivetDeviceRouter, _ route: String, _ json: String, id: UInt64 = 7, version: UInt8 = 1) async -> RivetDeviceEnvelope {
        await router.response(to: RivetDeviceEnvelope(
            version: version, kind: .call, correlationID: RVT1RequestID(id), name: route, payload: payload(json)))
    }

    @Test func answersWithTheCorrelationIDOfTheCall() async throws {
        let router = try await makeRouter()
        let answer = await call(router, "echo", #"{"text":"hi"}"#, id: 12345)
        #expect(answer.kind == .result)
        #expect(answer.correlationID == 12345)
        #expect(text(answer.payload) == #"{"text":"hi"}"#)
    }

    @Test func requestAtTheBoundIsServedAndOnePastIsRefused() async throws {
        let router = try await makeRouter()
        let atLimit = try RivetDeviceJSON.encode(echo(ofJSONSize: 524_288))
        #expect(atLimit.count == 524_288)
        let ok = await router.response(to: RivetDeviceEnvelope(kind: .call, correlationID: 1, name: "echo", payload: atLimit))
        #expect(ok.kind == .result)
        let over = try RivetDeviceJSON.encode(echo(ofJSONSize: 524_289))
        let refused = await router.response(to: RivetDeviceEnvelope(kind: .call, correlationID: 2, name: "echo", payload: over))
        #expect(refused.kind == .error)
        #expect(refused.name == "rivet.request-too-large")
        #expect(text(refused.payload) == "the request is 524289 bytes; the limit is 524288")
    }

    @Test func responseAtTheBoundIsSentAndOnePastIsRefused() async throws {
        let router = RivetDeviceRouter()
        try await router.register(Echo.self) { request in
            EchoReply(text: String(repeating: "b", count: Int(request.text)! - 11))
        }
        let ok = await call(router, "echo", #"{"text":"524288"}"#)
        #expect(ok.kind == .result)
        #expect(ok.payload.count == 524_288)
        let refused = await call(router, "echo", #"{"text":"524289"}"#)
        #expect(refused.name == "rivet.response-too-large")
        #expect(text(refused.payload) == "the response is 524289 bytes; the limit is 524288")
    }

    @Test func configuredBoundsReplaceTheDefaults() async throws {
        let router = try await makeRouter(configuration: RivetDeviceConfiguration(maxRequestBytes: 20, maxResponseBytes: 15))
        #expect(await call(router, "echo", #"{"text":"abcd"}"#).kind == .result)  // 15 bytes both ways
        #expect(await call(router, "echo", #"{"text":"abcde"}"#).name == "rivet.response-too-large")
        #expect(await call(router, "echo", #"{"text":"abcdefghij"}"#).name == "rivet.request-too-large")
    }

    @Test func otherProtocolVersionIsRefused() async throws {
        let router = try await makeRouter()
        let answer = await call(router, "echo", #"{"text":"hi"}"#, version: 2)
        #expect(answer.name == "rivet.unsupported-version")
        #expect(answer.correlationID == 7)
        #expect(text(answer.payload) == "protocol version 2 is not supported; this side speaks 1")
    }

    @Test func unknownRouteIsReported() async throws {
        let router = try await makeRouter()
        let answer = await call(router, "reset", "{}")
        #expect(answer.name == "rivet.unknown-route")
        #expect(text(answer.payload) == #"no handler is registered for route "reset""#)
    }

    /// The message speaks the schema's names (the route and the JSON field), never a Swift type.
    @Test(arguments: [
        (#"{"txt":"hi"}"#, "`text` is missing"),
        ("[]", "it is not an object"),
        ("not json", "it is not valid JSON"),
        (#"{"text":5}"#, "`text` is not a string"),
        (#"{"text":null}"#, "`text` is null"),
    ])
    func undecodableArgumentsAreReported(body: String, detail: String) async throws {
        let router = try await makeRouter()
        let answer = await call(router, "echo", body)
        #expect(answer.name == "rivet.invalid-request")
        #expect(text(answer.payload) == "the payload does not decode as the arguments of echo: \(detail)")
        #expect(!text(answer.payload).contains("Echo"))
    }

    @Test func registeredErrorsBecomeTheirCodeAndMessage() async throws {
        let router = RivetDeviceRouter()
        try await router.register(Fail.self) { request in
            switch request.kind {
            case "unknown-game": throw ScoreError.unknownGame("final")
            case "bad-code": throw ScoreError.secret("classified")
            case "remote": throw RivetRemoteError(code: "score.locked", message: "the scoreboard is locked")
            case "cancel": throw CancellationError()
            default: throw UnregisteredError()
            }
        }
        try await router.registerError(ScoreError.self) { error in
            switch error {
            case .unknownGame(let game): RivetRemoteError(code: "score.unknown-game", message: "no game \(game)")
            case .secret(let secret): RivetRemoteError(code: "bad code \(secret)", message: secret)
            }
        }
        let known = await call(router, "fail", #"{"kind":"unknown-game"}"#)
        #expect(known.name == "score.unknown-game")
        #expect(text(known.payload) == "no game final")

        let remote = await call(router, "fail", #"{"kind":"remote"}"#)
        #expect(remote.name == "score.locked")
        #expect(text(remote.payload) == "the scoreboard is locked")

        let cancelled = await call(router, "fail", #"{"kind":"cancel"}"#)
        #expect(cancelled.name == "rivet.cancelled")

        for kind in ["other", "bad-code"] {
            let hidden = await call(router, "fail", "{\"kind\":\"\(kind)\"}")
            #expect(hidden.name == "rivet.internal")
            #expect(text(hidden.payload) == "the handler failed")
            #expect(!text(hidden.payload).contains("hunter2"))
            #expect(!text(hidden.payload).contains("classified"))
        }
    }

    @Test func nonFiniteResultIsAnInternalErrorNotACrash() async throws {
        struct Ratio: RivetDeviceRequest {
            typealias Response = Double
            static let route: RivetRoute = "ratio"
        }
        let router = RivetDeviceRouter()
        try await router.register(Ratio.self) { _ in Double.nan }
        let answer = await call(router, "ratio", "{}")
        #expect(answer.name == "rivet.internal")
    }

    @Test func stateReadsAndWritesDispatchByKey() async throws {
        let router = RivetDeviceRouter()
        let store = Counter()
        try await router.registerState(RivetStateKey<Int>("visits"), read: { store.count }, write: { value in
            for _ in 0..<value { store.increment() }
        })
        try await router.registerState(RivetStateKey<String>("version"), read: { "1.0" })
        let write = await router.response(to: RivetDeviceEnvelope(kind: .stateWrite, correlationID: 1, name: "visits", payload: payload("3")))
        #expect(write.kind == .result)
        #expect(text(write.payload) == "{}")
        let read = await router.response(to: RivetDeviceEnvelope(kind: .stateRead, correlationID: 2, name: "visits", payload: []))
        #expect(text(read.payload) == "3")
        let readOnly = await router.response(to: RivetDeviceEnvelope(kind: .stateWrite, correlationID: 3, name: "version", payload: payload(#""2.0""#)))
        #expect(readOnly.name == "rivet.read-only-state")
        let unknown = await router.response(to: RivetDeviceEnvelope(kind: .stateRead, correlationID: 4, name: "nope", payload: []))
        #expect(unknown.name == "rivet.unknown-route")
        let badValue = await router.response(to: RivetDeviceEnvelope(kind: .stateWrite, correlationID: 5, name: "visits", payload: payload(#""many""#)))
        #expect(badValue.name == "rivet.invalid-request")
        #expect(text(badValue.payload) == "the payload does not decode as the value of state key visits: it is not an integer")
    }
}
