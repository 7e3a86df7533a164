import ContainerKit
import ContainerKitDelivery
import Foundation

/// Braze's rules for the values a tag sends, applied while turning parameters into typed values. Every
/// broken rule is collected (not just the first), so one warning can list them all.
///
/// Lengths are counted in UTF-16 code units, as Braze's SDKs count them.
package struct BrazeRules {
    /// The longest key, name or string value Braze keeps.
    static let maximumLength = 255
    /// The longest external user ID, in UTF-8 bytes (Braze's SDK limit).
    static let maximumExternalIDBytes = 997
    /// The largest event or purchase properties holding arrays or objects, as compact JSON bytes.
    static let maximumPropertiesBytes = 50 * 1024
    /// The `$` keys Braze does take: Google's EU consent flags, which must be booleans.
    static let consentKeys: Set<String> = ["$google_ad_user_data", "$google_ad_personalization"]
    /// The keys of `/users/track`'s attributes object that are not custom attributes: whom the object is for and how
    /// it applies (`external_id`, `_update_existing_only`, …), and Braze's user-profile fields (braze-docs, "User
    /// attributes object"). A custom attribute under one of these names would set that field, or name another user,
    /// instead (`bio` is ignored).
    static let attributesObjectKeys: Set<String> = [
        "external_id", "user_alias", "braze_id", "_update_existing_only", "push_token_import",
        "country", "current_location", "date_of_first_session", "date_of_last_session", "dob", "email",
        "email_subscribe", "email_open_tracking_disabled", "email_click_tracking_disabled", "facebook", "first_name",
        "gender", "home_city", "image_url", "language", "last_name", "marked_email_as_spam_at", "phone",
        "push_subscribe", "push_tokens", "subscription_groups", "time_zone", "twitter", "bio",
    ]
    /// 3001-01-01T00:00:00Z, in seconds since 1970: Braze keeps a later date as a string.
    static let firstDateAfterYear3000: Double = 32_535_216_000
    /// The keys Braze reserves in an event's properties: `/users/track` refuses an event object that has one.
    static let eventReservedKeys = ["time", "event_name"]
    /// The keys Braze reserves in a purchase's properties (its own fields).
    static let purchaseReservedKeys = ["time", "event_name", "product_id", "quantity", "price", "currency"]

    private(set) var violations: [BrazeRuleViolation] = []

    mutating func fail(_ rule: BrazeRuleViolation.Rule, _ key: String, _ message: String) {
        violations.append(BrazeRuleViolation(rule, key: key, message))
    }

    // MARK: Strings and numbers

    /// A required, non-empty string of at most 255 characters. Integers are accepted as their decimal
    /// text (numeric product IDs).
    mutating func requiredString(_ arguments: ValueMap, _ key: String, acceptsIntegers: Bool = false) -> String? {
        guard let value = arguments[key] else {
            fail(.missingParameter, key, "missing parameter '\(key)'")
            return nil
        }
        let text: String
        switch value {
        case .string(let s): text = s
        case .int(let i) where acceptsIntegers: text = String(i)
        default:
            fail(.invalidType, key, "'\(key)' must be a string, not \(value.typeName) '\(value.jsString)'")
            return nil
        }
        return checkedString(text, key: key, what: "'\(key)'") ? text : nil
    }

    /// Checks a string value: not empty, at most 255 characters.
    /// (`what` names the value in a message, quotes included — `'title'`, `property 'title'`, `email` — and is
    /// only made when the check fails.)
    @discardableResult
    mutating func checkedString(
        _ text: String,
        key: String,
        what: @autoclosure () -> String,
        allowsEmpty: Bool = false
    ) -> Bool {
        if text.isEmpty && !allowsEmpty {
            fail(.empty, key, "\(what()) is empty")
            return false
        }
        if Self.isLong(text) {
            fail(
                .tooLong,
                key,
                "\(what()) is \(text.utf16.count) characters long; the limit is \(Self.maximumLength)"
            )
            return false
        }
        return true
    }

    /// Whether `text` is longer than ``maximumLength`` UTF-16 code units (counted only when its UTF-8 form,
    /// never shorter, is longer).
    private static func isLong(_ text: String) -> Bool {
        text.utf8.count > maximumLength && text.utf16.count > maximumLength
    }

    /// A key of a property or custom attribute: not empty, at most 255 characters, no leading `$`.
    @discardableResult
    mutating func checkedKey(_ key: String, kind: String, allowsConsentKeys: Bool = false) -> Bool {
        if key.isEmpty {
            fail(.empty, key, "\(kind) key is empty")
            return false
        }
        if Self.isLong(key) {
            fail(.tooLong, key, "\(kind) key '\(key)' is longer than \(Self.maximumLength) characters")
            return false
        }
        if key.utf8.first == 0x24 && !(allowsConsentKeys && Self.consentKeys.contains(key)) {
            fail(.reservedKey, key, "\(kind) key '\(key)' starts with '$', which braze reserves")
            return false
        }
        return true
    }

    /// An integer: `.int`, a whole `.double`, or a string of decimal digits.
    mutating func integer(_ value: Value, key: String) -> Int64? {
        switch value {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: return Int64(d)
        case .string(let s):
            if let i = Int64(s.trimmingSpaces) { return i }
        default: break
        }
        fail(.invalidType, key, "'\(key)' must be an integer, not \(value.typeName) '\(value.jsString)'")
        return nil
    }

    /// A finite number: `.int`, `.double`, or a decimal string.
    mutating func number(_ value: Value, key: String) -> Double? {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d) where d.isFinite: return d
        case .string where value.jsNumber?.isFinite == true: return value.jsNumber
        default:
            fail(.invalidType, key, "'\(key)' must be a finite number, not \(value.typeName) '\(value.jsString)'")
            return nil
        }
    }

    // MARK: Properties

    /// Every argument except `excluded` as an event or purchase property, types kept, checked against
    /// Braze's property rules; a key in `reserved` (``eventReservedKeys``, ``purchaseReservedKeys``) breaks them.
    /// (`excluded` and `reserved` are a handful of names: compared one by one, which costs less than hashing each key.)
    mutating func properties(_ arguments: ValueMap, excluding excluded: [String], reserved: [String]) -> ValueMap {
        var properties = ValueMap(minimumCapacity: arguments.count)
        var nested = false
        let keys = arguments.keys
        for position in keys.indices {
            let key = keys[position]
            guard !excluded.contains(key) else { continue }
            guard checkedKey(key, kind: "property") else { continue }
            if reserved.contains(key) {
                fail(.reservedKey, key, "property key '\(key)' is reserved by braze (/users/track refuses the object)")
                continue
            }
            let value = arguments.value(at: position)
            switch value {
            case .string(let s):
                checkedString(s, key: key, what: "property '\(key)'", allowsEmpty: true)
            case .int, .bool:
                break
            case .double(let d):
                if !d.isFinite {
                    fail(.invalidValue, key, "property '\(key)' is '\(value.jsString)', not a finite number")
                }
            case .array(let list):
                nested = true
                for element in list {
                    if case .string(let s) = element {
                        checkedString(s, key: key, what: "an element of '\(key)'", allowsEmpty: true)
                    }
                }
            case .object:
                nested = true
            case .null, .undefined:
                fail(
                    .invalidType,
                    key,
                    "property '\(key)' is \(value.typeName); braze takes numbers, booleans, strings, arrays and objects"
                )
            }
            // The arguments' keys are distinct: no search for an existing entry.
            properties.appendNew(key, value)
        }
        if nested {
            var json = JSONByteWriter()
            json.object(properties)
            if json.count > Self.maximumPropertiesBytes {
                fail(
                    .propertiesTooLarge,
                    "properties",
                    "properties are \(json.count) bytes of json; the limit with arrays or objects is "
                        + "\(Self.maximumPropertiesBytes)"
                )
            }
        }
        return properties
    }

    // MARK: Custom attributes

    /// The value of `customAttribute`, converted as `type` (the `customAttributeType` parameter) says,
    /// or inferred from the value's own type when there is no `type`.
    mutating func customAttributeValue(_ value: Value, type: Value?, key: String) -> CustomAttributeValue? {
        let typeName: String?
        switch type {
        case nil: typeName = nil
        case .string(let name)?: typeName = name.lowercased()
        case let other?:
            fail(.invalidType, "customAttributeType", "'customAttributeType' must be a string, not \(other.typeName)")
            return nil
        }
        if value == .null { return .null }
        switch typeName {
        case nil:
            switch value {
            case .string(let s):
                return checkedString(s, key: key, what: "value of '\(key)'", allowsEmpty: true) ? .string(s) : nil
            case .int(let i): return .int(i)
            case .double(let d):
                guard d.isFinite else { break }
                return .double(d)
            case .bool(let b): return .bool(b)
            case .array: return stringList(value, key: key, singleStringAllowed: false).map { .strings($0) }
            default: break
            }
            fail(.invalidType, key, "custom attribute '\(key)' cannot be \(value.typeName) '\(value.jsString)'")
            return nil
        case "string"?:
            switch value {
            case .string, .int, .double, .bool:
                let text = value.jsString
                return checkedString(text, key: key, what: "value of '\(key)'", allowsEmpty: true) ? .string(text) : nil
            default:
                fail(.invalidType, key, "custom attribute '\(key)' is declared a string but is \(value.typeName)")
                return nil
            }
        case "integer"?, "int"?, "long"?:
            return integer(value, key: key).map { .int($0) }
        case "double"?, "float"?, "number"?:
            return number(value, key: key).map { .double($0) }
        case "boolean"?, "bool"?:
            switch value {
            case .bool(let b): return .bool(b)
            case .string(let s) where s.lowercased() == "true": return .bool(true)
            case .string(let s) where s.lowercased() == "false": return .bool(false)
            default:
                fail(.invalidType, key, "custom attribute '\(key)' is declared a boolean but is '\(value.jsString)'")
                return nil
            }
        case "date"?:
            guard case .string(let text) = value, let date = ISO8601Timestamp.date(from: text) else {
                fail(
                    .invalidValue,
                    key,
                    "custom attribute '\(key)' is declared a date but '\(value.jsString)' is not an iso-8601 date"
                )
                return nil
            }
            // Braze keeps a date of a year before 0 or after 3000 as a string, not a time.
            guard date.timeIntervalSince1970 < Self.firstDateAfterYear3000 else {
                fail(
                    .invalidValue,
                    key,
                    "custom attribute '\(key)' is declared a date but '\(text)' is after the year 3000, "
                        + "which braze keeps as a string, not a date"
                )
                return nil
            }
            return .date(date)
        case "array"?, "strings"?:
            return stringList(value, key: key, singleStringAllowed: false).map { .strings($0) }
        case let other?:
            fail(.invalidValue, "customAttributeType", "unknown custom attribute type '\(other)'")
            return nil
        }
    }

    /// A string, or an array of strings, each at most 255 characters.
    mutating func stringList(_ value: Value, key: String, singleStringAllowed: Bool) -> [String]? {
        switch value {
        case .string(let s) where singleStringAllowed:
            return checkedString(s, key: key, what: "value of '\(key)'") ? [s] : nil
        case .array(let list):
            var strings: [String] = []
            strings.reserveCapacity(list.count)
            for element in list {
                guard case .string(let s) = element else {
                    fail(
                        .invalidType,
                        key,
                        "array attribute '\(key)' holds \(element.typeName) '\(element.jsString)'; "
                            + "only strings are allowed"
                    )
                    return nil
                }
                guard checkedString(s, key: key, what: "an element of '\(key)'") else { return nil }
                strings.append(s)
            }
            return strings
        default:
            let expected = singleStringAllowed ? "a string or an array of strings" : "an array of strings"
            fail(.invalidType, key, "'\(key)' must be \(expected), not \(value.typeName) '\(value.jsString)'")
            return nil
        }
    }

    // MARK: Standard attributes

    /// A standard field's value, normalized (country uppercase, language lowercase, gender as a letter);
    /// `.null` clears the field.
    mutating func standardAttribute(_ field: BrazeStandardAttribute, _ value: Value, key: String) -> Value? {
        if value == .null { return .null }
        guard case .string(let raw) = value else {
            fail(.invalidType, key, "'\(field.rawValue)' must be a string, not \(value.typeName) '\(value.jsString)'")
            return nil
        }
        let text = raw.trimmingSpaces
        func invalid(_ message: String) -> Value? {
            fail(.invalidValue, key, message)
            return nil
        }
        switch field {
        case .email:
            guard checkedString(text, key: key, what: "email") else { return nil }
            guard Self.isPlausibleEmail(text) else {
                fail(.invalidEmail, key, "'\(text)' does not look like an email address")
                return nil
            }
            return .string(text)
        case .firstName, .lastName, .homeCity:
            return checkedString(text, key: key, what: "'\(field.rawValue)'", allowsEmpty: true) ? .string(text) : nil
        case .phone:
            guard checkedString(text, key: key, what: "phone") else { return nil }
            let allowed = Set("0123456789+-(). ")
            guard text.contains(where: \.isNumber), text.allSatisfy({ allowed.contains($0) }) else {
                return invalid("'\(text)' does not look like a phone number")
            }
            return .string(text)
        case .gender:
            switch text.lowercased() {
            case "m", "male": return "M"
            case "f", "female": return "F"
            case "o", "other": return "O"
            case "n", "not_applicable": return "N"
            case "p", "prefer_not_to_say": return "P"
            default: return invalid("gender '\(text)' is not one of m, f, o, n, p")
            }
        case .dob:
            guard ISO8601Timestamp.isCalendarDate(text) else {
                return invalid("dob '\(text)' is not a date 'yyyy-mm-dd'")
            }
            return .string(text)
        case .country:
            guard text.utf8.count == 2, text.utf8.allSatisfy(Self.isASCIILetter) else {
                return invalid("country '\(text)' is not an iso-3166-1 alpha-2 code")
            }
            return .string(text.uppercased())
        case .language:
            guard text.utf8.count == 2, text.utf8.allSatisfy(Self.isASCIILetter) else {
                return invalid("language '\(text)' is not an iso-639-1 code")
            }
            return .string(text.lowercased())
        case .emailSubscribe, .pushSubscribe:
            let state = text.lowercased()
            guard ["opted_in", "subscribed", "unsubscribed"].contains(state) else {
                return invalid("\(field.rawValue) '\(text)' is not one of opted_in, subscribed, unsubscribed")
            }
            return .string(state)
        }
    }

    /// `local@domain.tld`: one `@`, no spaces, a dotted domain without empty labels.
    static func isPlausibleEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
