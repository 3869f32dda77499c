import FoundationEssentials

/// Reads a `Retry-After` field value (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
///
/// Dates are accepted in all three forms HTTP recipients must read: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year more than 50 years ahead being taken as
/// the previous century) and asctime (`Sun Nov  6 08:49:37 1994`).
public enum RetryAfter {
    /// The longest wait honoured: a larger value is cut to this (design: Retry-After ≤ 5 min).
    public static let maximum: Duration = .seconds(300)

    /// `value` without the whitespace (Unicode general category Zs, and tab: the scalars of
    /// Foundation's `CharacterSet.whitespaces`) at either end.
    static func trimmingWhitespace(_ value: String) -> String {
        let scalars = value.unicodeScalars
        let isBlank: (Unicode.Scalar) -> Bool = { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
            let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    /// Whether `value` is a `Retry-After` at all: delta-seconds (one or more digits) or an
    /// HTTP-date in one of the three forms, past dates included.
    /// - Parameter now: the current time, for two-digit years.
    public static func isValid(_ value: String, now: Date) -> Bool {
        let text = trimmingWhitespace(value)
        guard !text.isEmpty else { return false }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) { return true }
        return HTTPDate.parse(text, now: now) != nil
    }

    /// The wait `value` asks for, in whole seconds (a date's fraction of a second rounded up),
    /// clamped to ``maximum``; nil for garbage, a negative number or a date in the past.
    /// - Parameter now: the current time, for the date forms.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = trimmingWhitespace(value)
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Anything past ten digits is far beyond the clamp; do not overflow on it.
            guard text.utf8.count <= 10, let seconds = Int(text) else { return maximum }
            return min(.seconds(seconds), maximum)
        }
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
        let delta = date.timeIntervalSince(now)
        guard delta >= 0 else { return nil }
        guard delta < 300 else { return maximum }
        return .seconds(Int(delta.rounded(.up)))
    }
}

/// The three HTTP-date forms, parsed by hand: no locale, no formatter state.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    static func parse(_ text: String, now: Date) -> Date? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if words.count == 6, words[0].hasSuffix(","), shortDays.contains(String(words[0].dropLast())), words[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard words[1].count == 2, let day = Int(words[1]), let month = month(words[2]),
                words[3].count == 4, let year = Int(words[3])
            else { return nil }
            return date(year: year, month: month, day: day, time: words[4])
        }
        if words.count == 4, words[0].hasSuffix(","), longDays.contains(String(words[0].dropLast())), words[3] == "GMT" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let parts = words[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0].count == 2, let day = Int(parts[0]), let month = month(parts[1]),
                parts[2].count == 2, let shortYear = Int(parts[2])
            else { return nil }
            return date(year: fullYear(shortYear, now: now), month: month, day: day, time: words[2])
        }
        if words.count == 5, shortDays.contains(words[0]) {
            // asctime: Sun Nov  6 08:49:37 1994
            guard let month = month(words[1]), (1...2).contains(words[2].count), let day = Int(words[2]),
                words[4].count == 4, let year = Int(words[4])
            else { return nil }
            return date(year: year, month: month, day: day, time: words[3])
        }
        return nil
    }

    private static func month(_ text: String) -> Int? {
        months.firstIndex(of: text).map { $0 + 1 }
    }

    /// RFC 9110: a two-digit year that appears more than 50 years in the future is in the past
    /// century.
    private static func fullYear(_ shortYear: Int, now: Date) -> Int {
        let currentYear = 1970 + Int(now.timeIntervalSince1970 / 31_556_952)
        var year = (currentYear / 100) * 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    private static func date(year: Int, month: Int, day: Int, time: String) -> Date? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
            let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
            (1...31).contains(day), day <= daysIn(month: month, year: year), (1...9999).contains(year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
