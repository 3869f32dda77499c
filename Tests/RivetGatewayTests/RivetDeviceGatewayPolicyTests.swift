import Foundation
import RivetGateway
import RivetPairing
import RivetSchema
import Testing

@Suite struct RivetDeviceGatewayPolicyTests {
    @Test func exampleSchemaScopesGrantWhatTheyList() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("examples/schema/rivet.rktd"), encoding: .utf8)
        let policy = RivetDeviceGatewayPolicy(schema: try Schema.parse(text, file: "rivet.rktd"))
        #expect(policy.declaredScopes == Array(try scopes("controller", "viewer")).sorted())
        #expect(policy.grants(of: try RivetDeviceScope("viewer")) == RivetDeviceGrants(
            rpcs: ["current-score"], events: ["score-changed"], stateRead: ["home-team"]))
        #expect(policy.grants(of: try RivetDeviceScope("controller")) == RivetDeviceGrants(
            rpcs: ["refresh-score"], stateWrite: ["home-team"]))
        #expect(policy.grants(for: try scopes("viewer", "controller")) == RivetDeviceGrants(
            rpcs: ["current-score", "refresh-score"], events: ["score-changed"],
            stateRead: ["home-team"], stateWrite: ["home-team"]))
        #expect(policy.exported == RivetDeviceGrants(
            rpcs: ["current-score", "refresh-score"], events: ["score-changed"],
            stateRead: ["home-team"], stateWrite: ["home-team"]))
    }

    @Test func anEmptyScopeSetOrAnEmptyScopeGrantsNothing() throws {
        let policy = try gatewayPolicy()
        #expect(policy.grants(for: []) == .none)
        #expect(policy.grants(for: []).isEmpty)
        #expect(policy.grants(for: try scopes("idle")) == .none)
        #expect(policy.grants(of: try RivetDeviceScope("idle")) == RivetDeviceGrants.none)
    }

    @Test func scopesGrantEachCapabilityIndependently() throws {
        let policy = try gatewayPolicy()
        #expect(policy.grants(for: try scopes("volume-reader")) == RivetDeviceGrants(stateRead: ["volume"]))
        #expect(policy.grants(for: try scopes("volume-writer")) == RivetDeviceGrants(stateWrite: ["volume"]))
        #expect(policy.grants(for: try scopes("volume-reader", "volume-writer")) == RivetDeviceGrants(
            stateRead: ["volume"], stateWrite: ["volume"]))
    }

    @Test func undeclaredScopesGrantNothingAndCannotBeGranted() throws {
        let policy = try gatewayPolicy()
        #expect(policy.grants(of: try RivetDeviceScope("admin")) == nil)
        #expect(policy.grants(for: try scopes("admin", "viewer")) == policy.grants(for: try scopes("viewer")))
        #expect(throws: Never.self) { try policy.validateGrant(try scopes("viewer", "controller", "idle")) }
        #expect(throws: Never.self) { try policy.validateGrant([]) }
        let requested = try scopes("viewer", "zeta", "admin")
        do throws(RivetDeviceGatewayError) {
            try policy.validateGrant(requested)
            Issue.record("an undeclared scope was accepted")
        } catch {
            #expect(error == .unknownScope)
            #expect(error.code == "rivet.unknown-scope")
            #expect(error.message == "scopes `admin`, `zeta` are not declared in the schema; declare them with (scope NAME …) or grant declared scopes")
        }
        #expect(throws: RivetDeviceGatewayError.unknownScope) { try policy.validateGrant(try scopes("admin")) }
    }

    /// A `Schema` built or changed by hand, bypassing validation, still cannot make a scope
    /// grant anything beyond the `device-*` allowlists.
    @Test func grantsNeverExceedTheAllowlists() throws {
        var schema = try gatewaySchema()
        let index = try #require(schema.scopes.firstIndex { $0.name == "viewer" })
        func reference(_ name: String) throws -> SchemaNameReference {
            var reference = try #require(schema.deviceRPCs.first)
            reference.name = name
            return reference
        }
        schema.scopes[index].rpcs.append(try reference("reset-scores"))
        schema.scopes[index].events.append(try reference("audit"))
        schema.scopes[index].stateRead.append(try reference("secret"))
        schema.scopes[index].stateWrite.append(try reference("secret"))
        let policy = RivetDeviceGatewayPolicy(schema: schema)
        #expect(policy.grants(for: try scopes("viewer")) == RivetDeviceGrants(
            rpcs: ["current-score"], events: ["score-changed"], stateRead: ["home-team"]))
    }

    /// The schema accepts exactly the scope names a pairing can grant.
    @Test(arguments: [
        "viewer", "a", "0", "a-b", "a_b", "a.b", "..", "-", "_x", String(repeating: "z", count: 64),
        String(repeating: "z", count: 65), "", "Viewer", "a b", "a:b", "a/b", "é", "a+b",
    ])
    func schemaScopeNamesMatchPairingScopes(_ name: String) {
        let pairing = (try? RivetDeviceScope(name)) != nil
        #expect(Schema.isValidScopeName(name) == pairing)
    }

    @Test func grantsCombine() {
        let a = RivetDeviceGrants(rpcs: ["x"], events: ["e"], stateRead: ["r"], stateWrite: ["w"])
        let b = RivetDeviceGrants(rpcs: ["x", "y"], stateRead: ["q"])
        #expect(a.union(b) == RivetDeviceGrants(rpcs: ["x", "y"], events: ["e"], stateRead: ["r", "q"], stateWrite: ["w"]))
        #expect(a.intersection(b) == RivetDeviceGrants(rpcs: ["x"]))
        #expect(!a.isEmpty)
    }
}

@Suite struct RivetDeviceGatewayLimitsTests {
    @Test func defaultsAreTheProjectBounds() throws {
        let limits = RivetDeviceGatewayLimits.default
        #expect(limits.maxPayloadBytes == 524_288)
        #expect(limits.maxPendingCallsPerSession == 64)
        #expect(limits.maxSessions == 8)
        #expect(limits.maxQueuedBytesPerSession == 4 * 1024 * 1024)
        #expect(limits.maxQueuedFramesPerSession == 256)
        #expect(limits.largestFrameBytes == 20 + 255 + 524_288)
        #expect(try RivetDeviceGatewayLimits() == limits)
    }

    @Test func outOfRangeLimitsAreRefusedWithAReason() throws {
        func refusal(_ make: () throws(RivetDeviceGatewayError) -> RivetDeviceGatewayLimits) -> String? {
            do {
                _ = try make()
                return nil
            } catch {
                #expect(error == .invalidLimits)
                return error.message
            }
        }
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxPayloadBytes: -1) }
            == "payload bound -1 is outside 0...4294967295")
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxPayloadBytes: Int(UInt32.max) + 1, maxQueuedBytesPerSession: Int.max) }
            == "payload bound 4294967296 is outside 0...4294967295")
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxPendingCallsPerSession: 0) }
            == "pending calls per session bound is 0; it must be at least 1")
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxSessions: 0) }
            == "sessions bound is 0; it must be at least 1")
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxQueuedFramesPerSession: 0) }
            == "queued frames per session bound is 0; it must be at least 1")
        // The byte queue must hold one largest frame: 20 + 255 + 1000 bytes, at the edge.
        #expect(refusal { () throws(RivetDeviceGatewayError) in try RivetDeviceGatewayLimits(maxPayloadBytes: 1000, maxQueuedBytesPerSession: 1274) }
            == "queued bytes per session bound is 1274; it must hold one largest frame of 1275 bytes")
        #expect(try RivetDeviceGatewayLimits(maxPayloadBytes: 1000, maxQueuedBytesPerSession: 1275).maxQueuedBytesPerSession == 1275)
    }
}
