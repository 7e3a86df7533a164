import ContainerKit
import ContainerKitDelivery

/// Turns records into `/users/track` request bodies, within Braze's per-request object limits.
///
/// Object formats (identity member first: `external_id`, `braze_id` or `user_alias`):
/// - custom event → `events`: `{…, "name", "time", "properties"?}`
/// - purchase → `purchases`: `{…, "product_id", "currency", "price", "quantity", "time", "properties"?}`
/// - custom attribute → `attributes`: `{…, "<key>": value}`, or `{"inc": n}`, `{"add": […]}`,
///   `{"remove": […]}`; dates as ISO-8601 strings
/// - user attribute → `attributes`: `{…, "<field>": value}`
/// - change user → `attributes`: `{"external_id": "<new id>"}`, which creates the profile if needed
///   (merging the anonymous profile into it is `/users/identify`'s job, outside this sink)
///
/// Records without an identity cannot be sent and are returned as skipped.
struct BrazeUsersTrackBatcher: Sendable {
    /// One request: its body, the records it carries and its object counts.
    struct Request: Sendable {
        var body: [UInt8]
        var records: [AnalyticsRecord]
        var attributes = 0
        var events = 0
        var purchases = 0

        var objectCount: Int { attributes + events + purchases }
    }

    private enum Category { case attributes, events, purchases }

    let limit: BrazeUsersTrackDestination.ObjectLimit
    let createsAliasOnlyProfiles: Bool

    /// Groups `records` (in order) into as few requests as the limit allows.
    func requests(for records: [AnalyticsRecord]) -> (requests: [Request], skipped: [AnalyticsRecord]) {
        var requests: [Request] = []
        var skipped: [AnalyticsRecord] = []
        var attributes = JSONByteWriter()
        var events = JSONByteWriter()
        var purchases = JSONByteWriter()
        var counts = (attributes: 0, events: 0, purchases: 0)
        var carried: [AnalyticsRecord] = []

        func finish() {
            guard !carried.isEmpty else { return }
            var body = JSONByteWriter(
                capacity: attributes.bytes.count + events.bytes.count + purchases.bytes.count + 64
            )
            body.raw(0x7B)
            var first = true
            for (name, objects, count) in [
                ("attributes", attributes, counts.attributes), ("events", events, counts.events),
                ("purchases", purchases, counts.purchases),
            ] where count > 0 {
                if !first { body.raw(0x2C) }
                first = false
                body.string(name)
                body.raw(":[")
                body.append(objects)
                body.raw(0x5D)
            }
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

        for record in records {
            guard let user = record.user else {
                skipped.append(record)
                continue
            }
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
                writeObject(record, user, into: &events)
                counts.events += 1
            case .purchases:
                if counts.purchases > 0 { purchases.raw(0x2C) }
                writeObject(record, user, into: &purchases)
                counts.purchases += 1
            }
            carried.append(record)
        }
        finish()
        return (requests, skipped)
    }

    private static func category(of record: AnalyticsRecord) -> Category {
        switch record.payload {
        case .customEvent: return .events
        case .purchase: return .purchases
        case .customAttribute, .userAttribute, .changeUser: return .attributes
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
        case .changeUser:
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
