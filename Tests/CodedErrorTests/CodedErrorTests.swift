import CodedError
import Testing

/// A coded error as the modules write one: a code enum, a message its module may replace, and
/// one detail that `with(_:)` must keep.
private struct SampleError: CodedErrorMessage, Hashable {
    enum Code: Hashable, Sendable { case closed, timedOut(seconds: Int) }
    let code: Code
    var message: String
    let detail: Int?

    init(_ code: Code, _ message: String, detail: Int? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
    }
}

/// One that prints its code string, from a raw value.
private struct IdentifiedSample: IdentifiedCodedError, Hashable {
    enum Code: String, Sendable { case tooLong = "sample.too-long", tooShort = "sample.too-short" }
    let code: Code
    let message: String
}

/// One whose code is a string already.
private struct StringCodedSample: IdentifiedCodedError {
    let code: String
    let message: String
}

/// One whose codes sort into retry classes.
private struct RetrySample: RetryClassifiedError {
    enum Code: Hashable, Sendable { case refused, busy, reset }
    enum RetryClass: Hashable, Sendable { case permanent, transient }
    let code: Code
    let message: String

    static func retryClass(of code: Code) -> RetryClass {
        switch code {
        case .refused: .permanent
        case .busy, .reset: .transient
        }
    }
}

@Suite struct CodedErrorTests {
    @Test func equalityComparesTheCodeAndIgnoresTheMessage() {
        #expect(SampleError(.closed, "the peer closed") == SampleError(.closed, "closed while reading", detail: 4))
        #expect(SampleError(.closed, "same words") != SampleError(.timedOut(seconds: 3), "same words"))
        #expect(SampleError(.timedOut(seconds: 3), "a") == SampleError(.timedOut(seconds: 3), "b"))
        #expect(SampleError(.timedOut(seconds: 3), "a") != SampleError(.timedOut(seconds: 4), "a"))
        #expect(IdentifiedSample(code: .tooLong, message: "x") == IdentifiedSample(code: .tooLong, message: "y"))
        #expect(IdentifiedSample(code: .tooLong, message: "x") != IdentifiedSample(code: .tooShort, message: "x"))
    }

    @Test func hashingFollowsEquality() {
        let errors: Set = [SampleError(.closed, "one"), SampleError(.closed, "two", detail: 1), SampleError(.timedOut(seconds: 1), "three")]
        #expect(errors.count == 2)
        #expect(SampleError(.closed, "one").hashValue == SampleError(.closed, "two").hashValue)
    }

    @Test func withReplacesTheMessageAndKeepsTheCodeAndDetails() {
        let error = SampleError(.timedOut(seconds: 5), "timed out", detail: 7)
        let renamed = error.with("the read timed out after 5 s")
        #expect(renamed.message == "the read timed out after 5 s")
        #expect(renamed.code == .timedOut(seconds: 5))
        #expect(renamed.detail == 7)
        #expect(error.message == "timed out")
    }

    @Test func descriptionIsTheMessage() {
        #expect(SampleError(.closed, "the peer closed the stream").description == "the peer closed the stream")
        #expect("\(SampleError(.closed, "closed"))" == "closed")
    }

    @Test func anIdentifiedErrorPrintsItsCodeBeforeTheMessage() {
        let error = IdentifiedSample(code: .tooLong, message: "the line is too long")
        #expect(error.identifier == "sample.too-long")
        #expect(error.description == "sample.too-long: the line is too long")
        let named = StringCodedSample(code: "rivet.unknown-scope", message: "no such scope")
        #expect(named.identifier == "rivet.unknown-scope")
        #expect(named.description == "rivet.unknown-scope: no such scope")
        #expect(named == StringCodedSample(code: "rivet.unknown-scope", message: "other"))
    }

    @Test func theRetryClassComesFromTheCode() {
        #expect(RetrySample(code: .refused, message: "refused").retryClass == .permanent)
        #expect(RetrySample(code: .busy, message: "busy").retryClass == .transient)
        #expect(RetrySample(code: .reset, message: "reset").retryClass == RetrySample.retryClass(of: .reset))
    }
}
