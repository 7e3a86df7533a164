public import ContainerKit
public import Foundation

/// One typed analytics record: what a Braze tag produced for one user at one time, before any sink
/// turns it into output or requests.
///
/// Every record has a stable ``id`` (for de-duplication and acknowledgements), a ``time`` (whole
/// milliseconds, so it survives JSON unchanged), the ``user`` it is about (`nil` when the host gave the
/// session no identity) and a ``payload``.
///
/// ## JSON shape
///
/// ``jsonValue`` and ``jsonLine`` give one object per record, members in this order: `type`, `id`,
/// `time` (ISO-8601, UTC, milliseconds), the identity member (`external_id`, `braze_id` or
/// `user_alias: {alias_name, alias_label}`, left out when there is none), then by type:
///
/// ```json
/// {"type":"custom_event","id":"…","time":"2024-05-01T12:00:00.000Z","external_id":"u1",
///  "name":"played","properties":{"genre":"jazz","plays":3}}
/// {"type":"custom_attribute",…,"key":"level","value":7}
/// {"type":"custom_attribute",…,"key":"signup","value":"2024-01-02T00:00:00.000Z","value_type":"date"}
/// {"type":"custom_attribute",…,"key":"logins","value":{"inc":1}}        // also {"add":[…]}, {"remove":[…]}
/// {"type":"purchase",…,"product_id":"sku-1","currency":"USD","price":9.99,"quantity":1,"properties":{}}
/// {"type":"user_attribute",…,"key":"email","value":"a@example.com"}
/// {"type":"change_user",…,"external_id":"u2","previous_user":{"braze_id":"b-1"}}
/// {"type":"identify",…,"external_id":"u2","alias":{"alias_name":"s-1","alias_label":"anonymous"}}
/// ```
///
/// A `change_user` record's identity is the *new* user; the identity before the change, if any, is in
/// `previous_user`. An `identify` record's identity is the identified user (always an `external_id`), and
/// `alias` the user alias whose alias-only profile Braze merges into it (`/users/identify`).
/// ``init(jsonValue:)`` and ``init(jsonLine:)`` read this shape back.
public struct AnalyticsRecord: Sendable, Hashable, Identifiable {
    /// The record types, named as in JSON.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A custom event (`logEvent`).
        case customEvent = "custom_event"
        /// A custom attribute change (set, increment, add to or remove from an array).
        case customAttribute = "custom_attribute"
        /// A purchase (`logPurchase`).
        case purchase
        /// A standard profile field (`setUserAttribute`).
        case userAttribute = "user_attribute"
        /// The session's user became a known external ID (`changeUser`).
        case changeUser = "change_user"
        /// A user alias the records of a session went to is now known as an external ID: Braze merges the
        /// alias-only profile into the identified one (`/users/identify`).
        case identify
    }

    /// What the record says.
    public enum Payload: Sendable, Hashable {
        /// A custom event with typed properties.
        case customEvent(name: String, properties: ValueMap)
        /// A change to a custom attribute.
        case customAttribute(key: String, operation: CustomAttributeOperation)
        /// A purchase: `price` in the currency's base unit, `quantity` 1–100, typed properties.
        case purchase(productID: String, currency: String, price: Double, quantity: Int, properties: ValueMap)
        /// A standard profile field; `value` is a string, or `.null` to clear the field.
        case userAttribute(BrazeStandardAttribute, value: Value)
        /// The user became `externalID`; `previousUser` is who the session was before.
        case changeUser(externalID: String, previousUser: UserIdentity?)
        /// The user alias `aliasName` (label `aliasLabel`) is the user `externalID`: merge its alias-only
        /// profile into the identified one.
        case identify(externalID: String, aliasName: String, aliasLabel: String)
    }

    /// A stable identifier, unique per record.
    public var id: String
    /// ``id``, as a ``TagRecord``'s ID (what a session remembers of a push that carried an event ID).
    public var recordID: String? { id }
    /// When the record was made, in whole milliseconds.
    public var time: Date
    /// Who the record is about; for ``Payload/changeUser(externalID:previousUser:)`` always the new
    /// `externalID`, for ``Payload/identify(externalID:aliasName:aliasLabel:)`` the identified `externalID`.
    public var user: UserIdentity?
    /// What the record says.
    public var payload: Payload

    /// Creates a record.
    /// - Parameters:
    ///   - id: a unique ID; a random one when `nil`.
    ///   - time: when it happened; rounded down to a whole millisecond.
    ///   - user: who it is about; ignored for a change-user or identify payload, whose user is its
    ///     `externalID`.
    ///   - payload: what it says.
    public init(id: String? = nil, time: Date = Date(), user: UserIdentity?, payload: Payload) {
        self.id = id ?? AnalyticsRecord.makeID()
        self.time = ISO8601Timestamp.truncatedToMilliseconds(time)
        switch payload {
        case .changeUser(let externalID, _), .identify(let externalID, _, _): self.user = .externalID(externalID)
        default: self.user = user
        }
        self.payload = payload
    }

    /// Whether this is an `identify` record (which a destination sends after the records before it).
    public var isIdentify: Bool {
        if case .identify = payload { true } else { false }
    }

    /// The record's type.
    public var kind: Kind {
        switch payload {
        case .customEvent: return .customEvent
        case .customAttribute: return .customAttribute
        case .purchase: return .purchase
        case .userAttribute: return .userAttribute
        case .changeUser: return .changeUser
        case .identify: return .identify
        }
    }

    /// A random 96-bit ID in hexadecimal (one system call). Hosts making many records should prefer
    /// an ``AnalyticsRecordIDGenerator``.
    public static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = String(generator.next() as UInt64, radix: 16)
        let low = String(generator.next() as UInt32, radix: 16)
        return String(repeating: "0", count: 16 - high.utf8.count) + high
            + String(repeating: "0", count: 8 - low.utf8.count) + low
    }

    // MARK: Writing

    /// The record as JSON (see the type's documentation for the shape).
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 9)
        map["type"] = .string(kind.rawValue)
        map["id"] = .string(id)
        map["time"] = .string(ISO8601Timestamp.string(from: time))
        if let user { map[user.fieldName] = user.fieldValue }
        switch payload {
        case .customEvent(let name, let properties):
            map["name"] = .string(name)
            map["properties"] = .object(properties)
        case .customAttribute(let key, let operation):
            map["key"] = .string(key)
            map["value"] = operation.jsonValue
            if case .set(let value) = operation, value.isDate { map["value_type"] = "date" }
        case .purchase(let productID, let currency, let price, let quantity, let properties):
            map["product_id"] = .string(productID)
            map["currency"] = .string(currency)
            map["price"] = .double(price)
            map["quantity"] = .int(Int64(quantity))
            map["properties"] = .object(properties)
        case .userAttribute(let field, let value):
            map["key"] = .string(field.rawValue)
            map["value"] = value
        case .changeUser(_, let previousUser):
            if let previousUser { map["previous_user"] = previousUser.jsonValue }
        case .identify(_, let name, let label):
            map["alias"] = .object(["alias_name": .string(name), "alias_label": .string(label)])
        }
        return .object(map)
    }

    /// The record as one line of compact JSON, without the line feed: the text of ``jsonValue``, except
    /// that a whole-number float keeps its fraction (`3.0`) so that it reads back as a float. Written
    /// straight to bytes, without building ``jsonValue``, because sinks write it for every record.
    public var jsonLine: String {
        var writer = JSONByteWriter()
        write(to: &writer)
        return writer.text
    }

    /// Appends the UTF-8 bytes of ``jsonLine`` to `bytes` (the record's ``TagRecord`` JSON, written
    /// without building ``jsonValue``).
    public func appendJSON(to bytes: inout [UInt8]) { appendJSONLine(to: &bytes) }

    /// Appends the UTF-8 bytes of ``jsonLine`` to `bytes`.
    public func appendJSONLine(to bytes: inout [UInt8]) {
        var writer = JSONByteWriter()
        write(to: &writer)
        writer.withBytes { bytes.append(contentsOf: $0) }
    }

    func write(to out: inout JSONByteWriter) {
        // Each literal run is one append (a record line is written once per record, on the push's path).
        switch kind {
        case .customEvent: out.raw("{\"type\":\"custom_event\",\"id\":")
        case .customAttribute: out.raw("{\"type\":\"custom_attribute\",\"id\":")
        case .purchase: out.raw("{\"type\":\"purchase\",\"id\":")
        case .userAttribute: out.raw("{\"type\":\"user_attribute\",\"id\":")
        case .changeUser: out.raw("{\"type\":\"change_user\",\"id\":")
        case .identify: out.raw("{\"type\":\"identify\",\"id\":")
        }
        out.string(id)
        out.raw(",\"time\":")
        out.time(time)
        if let user {
            out.raw(0x2C)
            out.identity(user)
        }
        switch payload {
        case .customEvent(let name, let properties):
            out.raw(",\"name\":")
            out.string(name)
            out.raw(",\"properties\":")
            out.object(properties)
        case .customAttribute(let key, let operation):
            out.raw(",\"key\":")
            out.string(key)
            out.raw(",\"value\":")
            out.value(operation.jsonValue)
            if case .set(let value) = operation, value.isDate { out.raw(",\"value_type\":\"date\"") }
        case .purchase(let productID, let currency, let price, let quantity, let properties):
            out.purchaseFields(productID: productID, currency: currency, price: price, quantity: quantity)
            out.raw(",\"properties\":")
            out.object(properties)
        case .userAttribute(let field, let value):
            out.raw(",\"key\":")
            out.string(field.rawValue)
            out.raw(",\"value\":")
            out.value(value)
        case .changeUser(_, let previousUser):
            if let previousUser {
                out.raw(",\"previous_user\":{")
                out.identity(previousUser)
                out.raw(0x7D)
            }
        case .identify(_, let name, let label):
            out.raw(",\"alias\":{\"alias_name\":")
            out.string(name)
            out.raw(",\"alias_label\":")
            out.string(label)
            out.raw(0x7D)
        }
        out.raw(0x7D)
    }

    // MARK: Reading

    /// Reads a record from one line of JSON (as ``jsonLine`` writes it).
    public init(jsonLine: String) throws(AnalyticsRecordError) {
        try self.init(jsonBytes: Array(jsonLine.utf8))
    }

    /// Reads a record from the UTF-8 bytes of one JSON object.
    public init(jsonBytes: [UInt8]) throws(AnalyticsRecordError) {
        let value: Value
        do {
            value = try Value(jsonBytes: jsonBytes, maximumDepth: 64)
        } catch {
            let at = error.location.map { " at column \($0.column)" } ?? ""
            throw AnalyticsRecordError(.malformedJSON, "\(error.message)\(at)")
        }
        try self.init(jsonValue: value)
    }

    /// Reads a record from its JSON value (see the type's documentation for the shape).
    public init(jsonValue: Value) throws(AnalyticsRecordError) {
        guard case .object(let map) = jsonValue else {
            throw AnalyticsRecordError(.invalidRecord, "a record must be an object, not \(jsonValue.typeName)")
        }
        func string(_ key: String) throws(AnalyticsRecordError) -> String {
            guard case .string(let s)? = map[key] else { throw Self.invalid(key, "a string", map[key]) }
            return s
        }
        func properties() throws(AnalyticsRecordError) -> ValueMap {
            switch map["properties"] {
            case nil: return ValueMap()
            case .object(let properties)?: return properties
            case let other?: throw Self.invalid("properties", "an object", other)
            }
        }
        let typeName = try string("type")
        guard let kind = Kind(rawValue: typeName) else {
            throw AnalyticsRecordError(.invalidRecord, "unknown record type '\(typeName)'")
        }
        let id = try string("id")
        let timeText = try string("time")
        guard let time = ISO8601Timestamp.date(from: timeText) else {
            throw AnalyticsRecordError(.invalidRecord, "'time' is not an iso-8601 time: '\(timeText)'")
        }
        let user = UserIdentity(members: map)
        let payload: Payload
        switch kind {
        case .customEvent:
            payload = .customEvent(name: try string("name"), properties: try properties())
        case .customAttribute:
            let key = try string("key")
            let isDate = map["value_type"] == .string("date")
            guard let value = map["value"], let operation = CustomAttributeOperation(jsonValue: value, isDate: isDate)
            else { throw Self.invalid("value", "a custom attribute value", map["value"]) }
            payload = .customAttribute(key: key, operation: operation)
        case .purchase:
            guard let price = map["price"]?.numberValue else { throw Self.invalid("price", "a number", map["price"]) }
            guard case .int(let quantity)? = map["quantity"], let count = Int(exactly: quantity) else {
                throw Self.invalid("quantity", "an integer", map["quantity"])
            }
            payload = .purchase(
                productID: try string("product_id"),
                currency: try string("currency"),
                price: price,
                quantity: count,
                properties: try properties()
            )
        case .userAttribute:
            let key = try string("key")
            guard let field = BrazeStandardAttribute(rawValue: key) else {
                throw AnalyticsRecordError(.invalidRecord, "unknown user attribute '\(key)'")
            }
            payload = .userAttribute(field, value: map["value"] ?? .null)
        case .changeUser:
            let externalID = try string("external_id")
            var previous: UserIdentity?
            if let value = map["previous_user"] {
                guard case .object(let members) = value, let identity = UserIdentity(members: members) else {
                    throw Self.invalid("previous_user", "an identity", value)
                }
                previous = identity
            }
            payload = .changeUser(externalID: externalID, previousUser: previous)
        case .identify:
            let externalID = try string("external_id")
            guard case .object(let alias)? = map["alias"], case .string(let name)? = alias["alias_name"],
                case .string(let label)? = alias["alias_label"]
            else { throw Self.invalid("alias", "an object with alias_name and alias_label", map["alias"]) }
            payload = .identify(externalID: externalID, aliasName: name, aliasLabel: label)
        }
        self.init(id: id, time: time, user: user, payload: payload)
    }

    private static func invalid(_ key: String, _ expected: String, _ found: Value?) -> AnalyticsRecordError {
        AnalyticsRecordError(.invalidRecord, "'\(key)' must be \(expected), not \(found?.typeName ?? "missing")")
    }
}

extension AnalyticsRecord: TagRecord {}
