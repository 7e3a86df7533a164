import ContainerKit

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
        var body: String
        var records: [AnalyticsRecord]
        var attributes = 0
        var events = 0
        var purchases = 0

        var objectCount: Int { attributes + events + purchases }
    }

    private enum Category { case attributes, events, purchases }

    let limit: BrazeUsersTrackSink.ObjectLimit
    let createsAliasOnlyProfiles: Bool

    /// Groups `records` (in order) into as few requests as the limit allows.
    func requests(for records: [AnalyticsRecord]) -> (requests: [Request], skipped: [AnalyticsRecord]) {
        var requests: [Request] = []
        var skipped: [AnalyticsRecord] = []
        var attributes: [String] = []
        var events: [String] = []
        var purchases: [String] = []
        var carried: [AnalyticsRecord] = []

        func finish() {
            guard !carried.isEmpty else { return }
            var body = "{"
            var first = true
            for (name, objects) in [("attributes", attributes), ("events", events), ("purchases", purchases)]
            where !objects.isEmpty {
                if !first { body += "," }
                first = false
                body += "\"\(name)\":["
                body += objects.joined(separator: ",")
                body += "]"
            }
            body += "}"
            requests.append(
                Request(
                    body: body,
                    records: carried,
                    attributes: attributes.count,
                    events: events.count,
                    purchases: purchases.count
                )
            )
            attributes.removeAll()
            events.removeAll()
            purchases.removeAll()
            carried.removeAll()
        }

        for record in records {
            guard let (category, object) = object(for: record) else {
                skipped.append(record)
                continue
            }
            let fits: Bool
            switch limit {
            case .total(let maximum):
                fits = attributes.count + events.count + purchases.count < maximum
            case .perCategory(let maximum):
                switch category {
                case .attributes: fits = attributes.count < maximum
                case .events: fits = events.count < maximum
                case .purchases: fits = purchases.count < maximum
                }
            }
            if !fits { finish() }
            switch category {
            case .attributes: attributes.append(object)
            case .events: events.append(object)
            case .purchases: purchases.append(object)
            }
            carried.append(record)
        }
        finish()
        return (requests, skipped)
    }

    private func object(for record: AnalyticsRecord) -> (Category, String)? {
        guard let user = record.user else { return nil }
        var out = "{"
        user.writeMember(into: &out)
        if case .userAlias = user, createsAliasOnlyProfiles { out += ",\"_update_existing_only\":false" }
        let category: Category
        switch record.payload {
        case .customEvent(let name, let properties):
            category = .events
            out += ",\"name\":"
            JSONWriter.writeString(name, into: &out)
            writeTime(record, into: &out)
            writeProperties(properties, into: &out)
        case .purchase(let productID, let currency, let price, let quantity, let properties):
            category = .purchases
            out += ",\"product_id\":"
            JSONWriter.writeString(productID, into: &out)
            out += ",\"currency\":"
            JSONWriter.writeString(currency, into: &out)
            out += ",\"price\":"
            TypedJSONWriter.writeDouble(price, into: &out)
            out += ",\"quantity\":\(quantity)"
            writeTime(record, into: &out)
            writeProperties(properties, into: &out)
        case .customAttribute(let key, let operation):
            category = .attributes
            out += ","
            JSONWriter.writeString(key, into: &out)
            out += ":"
            TypedJSONWriter.write(operation.jsonValue, into: &out)
        case .userAttribute(let field, let value):
            category = .attributes
            out += ",\"\(field.rawValue)\":"
            TypedJSONWriter.write(value, into: &out)
        case .changeUser:
            category = .attributes
        }
        out += "}"
        return (category, out)
    }

    private func writeTime(_ record: AnalyticsRecord, into out: inout String) {
        out += ",\"time\":\""
        out += ISO8601Timestamp.string(from: record.time)
        out += "\""
    }

    private func writeProperties(_ properties: ValueMap, into out: inout String) {
        guard !properties.isEmpty else { return }
        out += ",\"properties\":"
        TypedJSONWriter.write(.object(properties), into: &out)
    }
}
