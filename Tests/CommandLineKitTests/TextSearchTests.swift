import ByteText
@testable import CommandLineKit
import Testing

@Suite struct TextSearchTests {
    @Test func firstRangeFindsTheFirstWholeOccurrence() {
        let text = "aab-ab--ab"
        let range = text.firstRange(ofText: "ab")
        #expect(range.map { text.distance(from: text.startIndex, to: $0.lowerBound) } == 1)
        #expect(text.firstRange(ofText: "--ab").map { String(text[$0]) } == "--ab")
        #expect(text.firstRange(ofText: "aab-ab--ab") == text.startIndex..<text.endIndex)
        #expect(text.firstRange(ofText: "aab-ab--abc") == nil)
        #expect(text.firstRange(ofText: "") == nil)
        #expect("".firstRange(ofText: "a") == nil)
        #expect("naïve café".firstRange(ofText: "café").map { String("naïve café"[$0]) } == "café")
    }

    @Test func replacingAllReplacesEveryOccurrenceLeftToRight() {
        #expect("a\\\\b'c".replacingAll("\\\\", with: "\\\\\\\\") == "a\\\\\\\\b'c")
        #expect("aaa".replacingAll("aa", with: "b") == "ba")
        #expect("x".replacingAll("y", with: "z") == "x")
        #expect("".replacingAll("y", with: "z") == "")
        #expect("--".replacingAll("-", with: "") == "")
        #expect("\\\\-a\\\\-".replacingAll("\\\\-", with: "-") == "-a-")
    }
}
