import Foundation
import RivetDevice
import RivetGateway
import Testing

@Suite struct RivetDeviceGatewayErrorCodeTests {
    static let all = [
        RivetDeviceGatewayErrorCode.forbidden, RivetDeviceGatewayErrorCode.requestTooLarge,
        RivetDeviceGatewayErrorCode.responseTooLarge, RivetDeviceGatewayErrorCode.busy,
        RivetDeviceGatewayErrorCode.backendUnavailable, RivetDeviceGatewayErrorCode.cancelled,
        RivetDeviceGatewayErrorCode.unknownRoute, RivetDeviceGatewayErrorCode.tooManySessions,
        RivetDeviceGatewayErrorCode.outgoingQueueFull, RivetDeviceGatewayErrorCode.revoked,
        RivetDeviceGatewayErrorCode.protocolViolation, RivetDeviceGatewayErrorCode.streamError,
        RivetDeviceGatewayErrorCode.disconnected, RivetDeviceGatewayErrorCode.shutdown,
        RivetDeviceGatewayErrorCode.replaced, RivetDeviceGatewayErrorCode.helloTimeout,
        RivetDeviceGatewayErrorCode.backendTimeout,
    ]

    @Test func codesAreStableDistinctNames() {
        #expect(Self.all == [
            "rivet.forbidden", "rivet.request-too-large", "rivet.response-too-large", "rivet.busy",
            "rivet.backend-unavailable", "rivet.cancelled", "rivet.unknown-route", "rivet.too-many-sessions",
            "rivet.outgoing-queue-full", "rivet.revoked", "rivet.protocol-violation", "rivet.stream-error",
            "rivet.disconnected", "rivet.shutdown", "rivet.replaced", "rivet.hello-timeout",
            "rivet.backend-timeout",
        ])
        #expect(Set(Self.all).count == Self.all.count)
    }

    /// Codes the device channel already defines mean the same thing at the gateway, so a
    /// `RivetDeviceClient` reports them the same way.
    @Test func sharedCodesMatchTheDeviceChannel() {
        #expect(RivetDeviceGatewayErrorCode.requestTooLarge == RivetRemoteError.Codes.requestTooLarge)
        #expect(RivetDeviceGatewayErrorCode.responseTooLarge == RivetRemoteError.Codes.responseTooLarge)
        #expect(RivetDeviceGatewayErrorCode.busy == RivetRemoteError.Codes.busy)
        #expect(RivetDeviceGatewayErrorCode.cancelled == RivetRemoteError.Codes.cancelled)
        #expect(RivetDeviceGatewayErrorCode.unknownRoute == RivetRemoteError.Codes.unknownRoute)
        #expect(RivetDeviceGatewayErrorCode.protocolViolation == RivetRemoteError.Codes.protocolViolation)
    }

    /// Every code is specified in docs/protocol.md (RVT1 part), section 12.
    @Test func everyCodeIsDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let whole = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let part = try #require(whole.range(of: "<!-- part: rvt1 -->"))
        let partEnd = whole.range(of: "<!-- part:", range: part.upperBound..<whole.endIndex)?.lowerBound ?? whole.endIndex
        let doc = String(whole[part.upperBound..<partEnd])
        let section = try #require(doc.range(of: "## 12. Gateway error codes")).upperBound
        let text = doc[section...]
        for code in Self.all {
            #expect(text.contains("`\(code)`"), "\(code) is not documented in section 12")
        }
        #expect(text.contains("this session may not use that name"))
    }
}
