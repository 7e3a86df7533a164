import ContainerKit
import ContainerKitDelivery

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns records into `/users/track` request bodies, within Braze's per-request object limits.
///
/// Object formats (identity member first: `external_id`, `braze_id` or `user_alias`):
/// - custom event → `events`: `{…, "name", "time", "properties"?}`
/// - purchase → `purchases`: `{…, "product_id", "currency", "price", "quantity", "time", "properties"?}`
/// - custom attribute → `attributes`: `{…, "<key>": value}`, or `{"inc": n}`, `{"add": […]}`,
///   `{"remove": […]}`; dates as ISO-8601 strings
/// - user attribute → `attributes`: `{…, "<field>": value}`
/// - change user → `attributes`: `{"external_id": "<new id>"}`, which creates the profile if needed
/// - identify → not `/users/track` but a `/users/identify` request, `{"aliases_to_identify": [{"external_id",
///   "user_alias": {"alias_name", "alias_label"}}, …], "merge_behavior": "merge"}` (at most
///   ``maximumAliasesPerIdentify`` aliases), placed in the order of the records: after the `/users/track`
///   request of the records before it, before the one of the records after it
///
/// Records without an identity cannot be sent and are returned as skipped.
struct BrazeUsersTrackBatcher: Sendable {
    /// Braze's limit of aliases in one `/users/identify` request (50).
    static let maximumAliasesPerIdentify = 50

    /// One request: its endpoint, its body, the records it carries and its object counts.
    struct Request: Sendable {
        /// Which endpoint a request goes to.
        enum Endpoint: Sendable, Equatable {
            /// `/users/track`.
            case track
            /// `/users/identify`.
            case identify
        }

        var endpoint = Endpoint.track
        var body: [UInt8]
        var records: [AnalyticsRecord]
        var attributes = 0
        var events = 0
        var purchases = 0
        /// Aliases to identify (a `/users/identify` request's objects).
        var aliases = 0

        var objectCount: Int { attributes + events + purchases + aliases }
    }

    private enum Category { case attributes, events, purchases }

    let limit: BrazeUsersTrackDestination.ObjectLimit
    let createsAliasOnlyProfiles: Bool

    /// Groups `records` (in order) into as few requests as the limit allows. With `json` (each record's
    /// JSON line, as the store kept it), a custom event's object is copied from its line instead of being
    /// encoded again (the same bytes: see ``EventObjectCopier``).
    func requests(
        for records: [AnalyticsRecord],
        json: RecordsJSON? = nil
    ) -> (requests: [Request], skipped: [AnalyticsRecord]) {
        let json = json?.count == records.count ? json : nil
        var requests: [Request] = []
        var skipped: [AnalyticsRecord] = []
        var attributes = JSONByteWriter()
        var events = JSONByteWriter()
        var purchases = JSONByteWriter()
        var counts = (attributes: 0, events: 0, purchases: 0)
        var carried: [AnalyticsRecord] = []
        var identifying: [AnalyticsRecord] = []

        /// Ends the `/users/identify` request being gathered, if any.
        func finishIdentify() {
            guard !identifying.isEmpty else { return }
            requests.append(Self.identifyRequest(identifying))
            identifying.removeAll()
        }

        func finish() {
            guard !carried.isEmpty else { return }
            var body = JSONByteWriter(capacity: attributes.count + events.count + purchases.count + 64)
            body.raw(0x7B)
            var first = true
            /// Appends `"<name>":[<objects>]` when there are any.
            func category(_ name: StaticString, _ objects: borrowing JSONByteWriter, _ count: Int) {
                guard count > 0 else { return }
                if !first { body.raw(0x2C) }
                first = false
                body.raw(0x22)
                body.raw(name)
                body.raw("\":[")
                body.append(objects)
                body.raw(0x5D)
            }
            category("attributes", attributes, counts.attributes)
            category("events", events, counts.events)
            category("purchases", purchases, counts.purchases)
            body.raw(0x7D)
            requests.append(
                Request(
                    body: body.bytes,
                    records: carried,
                    attributes: counts.attributes,
                    events: counts.events,
                    purchases: counts.purchases
                )
            )
            attributes = JSONByteWriter()
            events = JSONByteWriter()
            purchases = JSONByteWriter()
            counts = (0, 0, 0)
            carried.removeAll()
        }

        for (position, record) in records.enumerated() {
            guard let user = record.user else {
                skipped.append(record)
                continue
            }
            if case .identify = record.payload {
                // Braze merges what the alias-only profile holds when it identifies it: the records before
                // go first.
                finish()
                if identifying.count == Self.maximumAliasesPerIdentify { finishIdentify() }
                identifying.append(record)
                continue
            }
            finishIdentify()
            let category = Self.category(of: record)
            let fits: Bool
            switch limit {
            case .total(let maximum):
                fits = counts.attributes + counts.events + counts.purchases < maximum
            case .perCategory(let maximum):
                switch category {
                case .attributes: fits = counts.attributes < maximum
                case .events: fits = counts.events < maximum
                case .purchases: fits = counts.purchases < maximum
                }
            }
            if !fits { finish() }
            switch category {
            case .attributes:
                if counts.attributes > 0 { attributes.raw(0x2C) }
                writeObject(record, user, into: &attributes)
                counts.attributes += 1
            case .events:
                if counts.events > 0 { events.raw(0x2C) }
                let copied =
                    json.map {
                        EventObjectCopier.copy(
                            $0,
                            position,
                            of: record,
                            createsAliasOnlyProfiles: createsAliasOnlyProfiles,
                            into: &events
                        )
                    } ?? false
                if !copied { writeObject(record, user, into: &events) }
                counts.events += 1
            case .purchases:
                if counts.purchases > 0 { purchases.raw(0x2C) }
                writeObject(record, user, into: &purchases)
                counts.purchases += 1
            }
            carried.append(record)
        }
        finish()
        finishIdentify()
        return (requests, skipped)
    }

    /// The `/users/identify` request of `records` (identify records, at most
    /// ``maximumAliasesPerIdentify``), in their order. `merge_behavior` is said: `merge` is Braze's default
    /// since August 2023, and without it an older workspace would keep the alias-only profile's events apart.
    static func identifyRequest(_ records: [AnalyticsRecord]) -> Request {
        var body = JSONByteWriter(capacity: 64 + 96 * records.count)
        body.raw("{\"aliases_to_identify\":[")
        for (index, record) in records.enumerated() {
            guard case .identify(let externalID, let name, let label) = record.payload else { continue }
            if index > 0 { body.raw(0x2C) }
            body.raw("{\"external_id\":")
            body.string(externalID)
            body.raw(0x2C)
            body.identity(.userAlias(name: name, label: label))
            body.raw(0x7D)
        }
        body.raw("],\"merge_behavior\":\"merge\"}")
        return Request(endpoint: .identify, body: body.bytes, records: records, aliases: records.count)
    }

    private static func category(of record: AnalyticsRecord) -> Category {
        switch record.payload {
        case .customEvent: return .events
        case .purchase: return .purchases
        // An identify record never gets here (it is a request of its own).
        case .customAttribute, .userAttribute, .changeUser, .identify: return .attributes
        }
    }

    private func writeObject(_ record: AnalyticsRecord, _ user: UserIdentity, into out: inout JSONByteWriter) {
        out.raw(0x7B)
        out.identity(user)
        if case .userAlias = user, createsAliasOnlyProfiles { out.raw(",\"_update_existing_only\":false") }
        switch record.payload {
        case .customEvent(let name, let properties):
            out.raw(",\"name\":")
            out.string(name)
            out.raw(",\"time\":")
            out.time(record.time)
            writeProperties(properties, into: &out)
        case .purchase(let productID, let currency, let price, let quantity, let properties):
            out.purchaseFields(productID: productID, currency: currency, price: price, quantity: quantity)
            out.raw(",\"time\":")
            out.time(record.time)
            writeProperties(properties, into: &out)
        case .customAttribute(let key, let operation):
            out.raw(0x2C)
            out.string(key)
            out.raw(0x3A)
            out.value(operation.jsonValue)
        case .userAttribute(let field, let value):
            out.raw(0x2C)
            out.string(field.rawValue)
            out.raw(0x3A)
            out.value(value)
        case .changeUser, .identify:
            break
        }
        out.raw(0x7D)
    }

    private func writeProperties(_ properties: ValueMap, into out: inout JSONByteWriter) {
        guard !properties.isEmpty else { return }
        out.raw(",\"properties\":")
        out.object(properties)
    }
}

/// Copies a custom event's `/users/track` object out of the record's JSON line — the bytes the provider
/// encoded once, when the record was enqueued — instead of encoding the record again.
///
/// A line (``AnalyticsRecord/jsonLine``) of a custom event reads
/// `{"type":"custom_event","id":"…","time":"…",<identity>,"name":"…","properties":{…}}`, and the event
/// object is `{<identity>[,"_update_existing_only":false],"name":"…","time":"…"[,"properties":{…}]}`: the
/// same identity, name, time and properties bytes (one writer, the same record), rearranged. The copier
/// checks that shape as it goes (strings are skipped escape by escape, so nothing inside one is taken for
/// a separator) and copies nothing when a line is not in it; the batcher then encodes the record.
enum EventObjectCopier {
    /// Appends the event object of `record` (a custom event with a user) from `json[index]` to `out`;
    /// `false`, with nothing appended, when the line is not the shape expected.
    static func copy(
        _ json: RecordsJSON,
        _ index: Int,
        of record: AnalyticsRecord,
        createsAliasOnlyProfiles: Bool,
        into out: inout JSONByteWriter
    ) -> Bool {
        guard case .customEvent(_, let properties) = record.payload, let user = record.user else { return false }
        let isAlias: Bool
        if case .userAlias = user { isAlias = true } else { isAlias = false }
        let range = json.ranges[index]
        return json.bytes.withUnsafeBufferPointer { all in
            guard range.lowerBound >= 0, range.upperBound <= all.count else { return false }
            let line = UnsafeBufferPointer(rebasing: all[range])
            guard let parts = parts(of: line), parts.isAlias == isAlias else { return false }
            out.raw(0x7B)
            out.append(UnsafeBufferPointer(rebasing: line[parts.identity]))
            if isAlias && createsAliasOnlyProfiles { out.raw(",\"_update_existing_only\":false") }
            out.raw(",\"name\":")
            out.append(UnsafeBufferPointer(rebasing: line[parts.name]))
            out.raw(",\"time\":")
            out.append(UnsafeBufferPointer(rebasing: line[parts.time]))
            if !properties.isEmpty {
                out.raw(",\"properties\":")
                out.append(UnsafeBufferPointer(rebasing: line[parts.properties]))
            }
            out.raw(0x7D)
            return true
        }
    }

    /// Where a custom event line's parts are (each a JSON value, or the identity member(s)).
    struct Parts: Equatable {
        var time: Range<Int>
        var identity: Range<Int>
        var isAlias: Bool
        var name: Range<Int>
        var properties: Range<Int>
    }

    /// The parts of a custom event's line, or `nil` when `line` is not one in the shape
    /// ``AnalyticsRecord/jsonLine`` writes.
    static func parts(of line: UnsafeBufferPointer<UInt8>) -> Parts? {
        var reader = Reader(bytes: line)
        guard reader.take("{\"type\":\"custom_event\",\"id\":"), reader.skipString(),
            reader.take(",\"time\":")
        else { return nil }
        let timeStart = reader.index
        guard reader.skipString() else { return nil }
        let time = timeStart..<reader.index
        guard reader.take(",") else { return nil }
        let identityStart = reader.index
        let isAlias: Bool
        if reader.take("\"user_alias\":{\"alias_name\":") {
            guard reader.skipString(), reader.take(",\"alias_label\":"), reader.skipString(), reader.take("}") else {
                return nil
            }
            isAlias = true
        } else if reader.take("\"external_id\":") || reader.take("\"braze_id\":") {
            guard reader.skipString() else { return nil }
            isAlias = false
        } else {
            return nil
        }
        let identity = identityStart..<reader.index
        guard reader.take(",\"name\":") else { return nil }
        let nameStart = reader.index
        guard reader.skipString() else { return nil }
        let name = nameStart..<reader.index
        guard reader.take(",\"properties\":"), reader.index < line.count - 1, line[reader.index] == 0x7B,
            line[line.count - 1] == 0x7D
        else { return nil }
        return Parts(
            time: time,
            identity: identity,
            isAlias: isAlias,
            name: name,
            properties: reader.index..<(line.count - 1)
        )
    }

    /// A cursor over a line's bytes.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        /// Takes `literal` when the bytes at the cursor are exactly it.
        mutating func take(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard count <= bytes.count - index,
                memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0
            else { return false }
            index += count
            return true
        }

        /// Skips a JSON string (its quotes included); `false` when there is none at the cursor, or it does
        /// not end.
        mutating func skipString() -> Bool {
            guard index < bytes.count, bytes[index] == 0x22 else { return false }
            // From one quote, backslash or control character to the next (a string's plain runs are skipped
            // eight bytes at a time).
            var i = JSONByteWriter.firstByteToEscape(in: bytes, from: index + 1)
            while i < bytes.count {
                switch bytes[i] {
                case 0x22:
                    index = i + 1
                    return true
                case 0x5C: i += 2
                default: i += 1
                }
                i = JSONByteWriter.firstByteToEscape(in: bytes, from: i)
            }
            return false
        }
    }
}
