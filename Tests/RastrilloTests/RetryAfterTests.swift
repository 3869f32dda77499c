import Foundation
import Rastrillo
import Testing

@Suite struct RetryAfterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT.
    let now = Date(timeIntervalSince1970: 784_111_777)

    @Test func deltaSeconds() {
        #expect(RetryAfter.parse("0", now: now) == .zero)
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 7 ", now: now) == .seconds(7))
    }

    @Test func deltaIsClampedToFiveMinutes() {
        #expect(RetryAfter.parse("300", now: now) == .seconds(300))
        #expect(RetryAfter.parse("301", now: now) == .seconds(300))
        #expect(RetryAfter.parse("99999999999999999999999", now: now) == .seconds(300))
    }

    @Test func imfFixdate() {
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 09:49:37 GMT", now: now) == .seconds(300))
    }

    @Test func fractionOfASecondRoundsUp() {
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:40 GMT", now: now.addingTimeInterval(0.25)) == .seconds(3))
    }

    @Test func obsoleteForms() {
        #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:49:47 GMT", now: now) == .seconds(10))
        #expect(RetryAfter.parse("Sun Nov  6 08:49:57 1994", now: now) == .seconds(20))
        #expect(RetryAfter.parse("Sun Nov 6 08:49:57 1994", now: now) == .seconds(20))
    }

    @Test func rfc850YearsMoreThanFiftyYearsAheadAreThePreviousCentury() {
        let in2030 = Date(timeIntervalSince1970: 1_893_456_000)  // 2030-01-01
        // "81" would be 2081, more than 50 years ahead of 2030: it is 1981, in the past.
        #expect(RetryAfter.parse("Thursday, 01-Jan-81 00:00:00 GMT", now: in2030) == nil)
        #expect(RetryAfter.parse("Tuesday, 01-Jan-30 00:00:10 GMT", now: in2030) == .seconds(10))
    }

    @Test(arguments: [
        "", "soon", "-5", "1.5", "+3", "0x10", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun Nov 06 08:49:37",
    ])
    func garbageIsIgnored(value: String) {
        #expect(RetryAfter.parse(value, now: now) == nil)
    }

    @Test func datesInThePastAreIgnored() {
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:36 GMT", now: now) == nil)
        #expect(RetryAfter.parse("Sat, 01 Jan 2000 00:00:00 GMT", now: Date(timeIntervalSince1970: 2_000_000_000)) == nil)
    }
}
