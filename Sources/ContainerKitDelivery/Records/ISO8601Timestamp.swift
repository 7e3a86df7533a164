public import Foundation

/// Formats and parses the ISO-8601 times that records and Braze's REST API use.
///
/// Formatting always gives UTC with milliseconds: `2024-05-01T12:30:00.250Z`. Parsing accepts a date
/// (`2024-05-01`, midnight UTC), or a date and time with optional seconds, fraction and zone
/// (`2024-05-01T12:30`, `2024-05-01T12:30:00.25+02:00`, `…Z`); a time without a zone is UTC, as Braze
/// reads it. Both directions are hand-written (no `DateFormatter`), so they are cheap on hot paths.
///
/// ```swift
/// ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 0))  // "1970-01-01T00:00:00.000Z"
/// ISO8601Timestamp.date(from: "1970-01-02")                     // 86,400 s after the epoch
/// ```
public enum ISO8601Timestamp {
    /// Returns `date` as `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` in UTC (milliseconds rounded down).
    public static func string(from date: Date) -> String {
        let (year, month, day, inDay) = components(of: date)
        var out = ""
        out.reserveCapacity(24)
        appendPadded(year, width: 4, to: &out)
        out += "-"
        appendPadded(month, width: 2, to: &out)
        out += "-"
        appendPadded(day, width: 2, to: &out)
        out += "T"
        appendPadded(inDay / 3_600_000, width: 2, to: &out)
        out += ":"
        appendPadded(inDay / 60_000 % 60, width: 2, to: &out)
        out += ":"
        appendPadded(inDay / 1000 % 60, width: 2, to: &out)
        out += "."
        appendPadded(inDay % 1000, width: 3, to: &out)
        out += "Z"
        return out
    }

    /// The UTC year, month, day and millisecond of the day of `date`.
    static func components(of date: Date) -> (year: Int64, month: Int64, day: Int64, millisecond: Int64) {
        let millis = milliseconds(since1970: date)
        let days = floorDivide(millis, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        return (year, month, day, millis - days * 86_400_000)
    }

    /// Parses an ISO-8601 date or date-time; `nil` when `text` is not one (or names an impossible date).
    public static func date(from text: String) -> Date? {
        var scanner = Scanner(bytes: Array(text.utf8))
        guard let year = scanner.digits(4), scanner.take(0x2D),
            let month = scanner.digits(2), scanner.take(0x2D),
            let day = scanner.digits(2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var millis = days(fromCivil: year, month, day) * 86_400_000
        if scanner.isAtEnd { return Date(timeIntervalSince1970: Double(millis) / 1000) }
        guard scanner.take(0x54) || scanner.take(0x74) || scanner.take(0x20),
            let hour = scanner.digits(2), scanner.take(0x3A), let minute = scanner.digits(2),
            hour < 24, minute < 60
        else { return nil }
        var second: Int64 = 0
        var fraction = 0.0
        if scanner.take(0x3A) {
            guard let s = scanner.digits(2), s < 60 else { return nil }
            second = s
            if scanner.take(0x2E) || scanner.take(0x2C) {
                var scale = 0.1
                var count = 0
                while let digit = scanner.digit() {
                    fraction += Double(digit) * scale
                    scale /= 10
                    count += 1
                }
                guard count > 0 else { return nil }
            }
        }
        millis += hour * 3_600_000 + minute * 60_000 + second * 1000
        if !scanner.isAtEnd {
            if scanner.take(0x5A) || scanner.take(0x7A) {
                // UTC
            } else if let sign = scanner.sign() {
                guard let zoneHour = scanner.digits(2), zoneHour < 24 else { return nil }
                var zoneMinute: Int64 = 0
                if !scanner.isAtEnd {
                    _ = scanner.take(0x3A)
                    guard let m = scanner.digits(2), m < 60 else { return nil }
                    zoneMinute = m
                }
                millis -= sign * (zoneHour * 3_600_000 + zoneMinute * 60_000)
            } else {
                return nil
            }
        }
        guard scanner.isAtEnd else { return nil }
        return Date(timeIntervalSince1970: Double(millis) / 1000 + fraction)
    }

    /// Whether `text` is a calendar date `YYYY-MM-DD` (Braze's `dob` format).
    public static func isCalendarDate(_ text: String) -> Bool {
        var scanner = Scanner(bytes: Array(text.utf8))
        guard let year = scanner.digits(4), scanner.take(0x2D),
            let month = scanner.digits(2), scanner.take(0x2D),
            let day = scanner.digits(2), scanner.isAtEnd
        else { return false }
        return (1...12).contains(month) && day >= 1 && day <= daysIn(month: month, year: year)
    }

    /// Whole milliseconds since 1970, rounded down.
    static func milliseconds(since1970 date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return 0 }
        return Int64(max(min(value, 253_402_300_799_999), -62_135_596_800_000))
    }

    /// `date` rounded down to a whole millisecond, so that it survives formatting and parsing unchanged.
    package static func truncatedToMilliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds(since1970: date)) / 1000)
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, H. Hinnant's algorithms)

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func appendPadded(_ value: Int64, width: Int, to out: inout String) {
        let digits = String(value)
        if digits.utf8.count < width { out += String(repeating: "0", count: width - digits.utf8.count) }
        out += digits
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int64? {
            guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
            index += 1
            return Int64(bytes[index - 1] - 0x30)
        }

        mutating func digits(_ count: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<count {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }

        mutating func sign() -> Int64? {
            if take(0x2B) { return 1 }
            if take(0x2D) { return -1 }
            return nil
        }
    }
}
