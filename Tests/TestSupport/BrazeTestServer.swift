public import ContainerKit
import ContainerKitTesting
public import Foundation

/// A stand-in for Braze's `POST /users/track` on 127.0.0.1 that checks the request contract and answers
/// as Braze does, for testing clients without the network.
///
/// It checks the method and path, `Authorization: Bearer <apiKey>`, `Content-Type: application/json`, the
/// body's shape (`attributes`, `events`, `purchases` arrays of objects), the per-request object limit,
/// exactly one identifier per object (`external_id`, `braze_id` or `user_alias {alias_name, alias_label}`),
/// ISO-8601 times, purchase fields (product ID, ISO-4217-shaped currency, numeric price, quantity 1–100),
/// property rules (non-empty keys of at most 255 characters without a leading `$`, no `null`, strings of at
/// most 255 characters, at most 50 KB with arrays or objects), attribute operators (`inc`, `add`,
/// `remove`) and standard attribute formats. Answers: 201 `{"message":"success"}`; 201 with `errors` when
/// some objects are invalid (those are not accepted); 400 with `message` and `errors` when nothing is
/// valid or the request itself is; 401 for a wrong key; 404 for another path.
///
/// `POST /users/identify` is checked too: `aliases_to_identify`, 1–50 objects of `external_id` and
/// `user_alias {alias_name, alias_label}`, and `merge_behavior` `none` or `merge` when present; the aliases it
/// accepts are kept in order (``identifiedAliases``), and ``requests`` says which endpoint each request went to.
///
/// ```swift
/// let braze = try BrazeTestServer(apiKey: "key")
/// defer { braze.stop() }
/// braze.fail(next: 1, with: .rateLimited(retryAfter: "2"))
/// // … point the client at braze.endpoint …
/// await braze.waitForAcceptedObjects(10)
/// #expect(braze.violations.isEmpty)
/// ```
public final class BrazeTestServer: Sendable {
    /// The per-request object limit the server enforces.
    public enum ObjectLimit: Sendable, Hashable {
        /// At most this many objects in total.
        case total(Int)
        /// At most this many attributes, events and purchases each.
        case perCategory(Int)
        /// Braze's legacy limit: 75 of each.
        public static let legacy = ObjectLimit.perCategory(75)
    }

    /// A scripted failure, used for the next request(s) instead of the normal answer.
    public enum Failure: Sendable, Hashable {
        /// Answer this 5xx status with `{"message": "Internal Server Error"}`.
        case serverError(status: Int)
        /// Answer 429, with `Retry-After` when given.
        case rateLimited(retryAfter: String?)
        /// Answer 400 with this `message` and `errors`.
        case badRequest(message: String, errors: [String])
        /// Answer this status (401, 403, 404, a 3xx with `Location` when given) with a message: a refusal
        /// of the request, not of its records.
        case refuse(status: Int, location: String?)
        /// Never answer (until the client gives up).
        case hang
        /// Close the connection without answering.
        case closeConnection
        /// Send bytes that are not HTTP.
        case garbage
    }

    /// What the server saw of one request and how it answered.
    public struct RecordedRequest: Sendable {
        /// The answer's status (0 when a fault replaced the answer).
        public var status: Int
        /// The request's path (`/users/track`, `/users/identify`).
        public var path = "/users/track"
        /// The `Authorization` header.
        public var authorization: String?
        /// The `Content-Type` header.
        public var contentType: String?
        /// Object counts in the body.
        public var attributes = 0
        /// Object counts in the body.
        public var events = 0
        /// Object counts in the body.
        public var purchases = 0
        /// The scripted failure used, if any.
        public var failure: Failure?
        /// The body, when it was JSON.
        public var body: Value?

        /// All objects in the body.
        public var objectCount: Int { attributes + events + purchases }
    }

    private struct State: Sendable {
        var script: [Failure] = []
        var requests: [RecordedRequest] = []
        var attributes: [Value] = []
        var events: [Value] = []
        var purchases: [Value] = []
        var identified: [Value] = []
        var violations: [String] = []
    }

    /// The bearer key requests must carry.
    public let apiKey: String
    /// The object limit enforced.
    public let objectLimit: ObjectLimit
    /// The state the connection threads and the test share; tests wait on it.
    private let storage = AwaitableState(State())
    private let server: LoopbackHTTPServer

    /// The REST endpoint to give clients (`http://127.0.0.1:<port>`); requests go to `/users/track`.
    public var endpoint: URL { server.baseURL }

    /// Connections accepted so far.
    public var connectionCount: Int { server.connectionCount }

    /// Starts the server.
    public init(apiKey: String = "test-rest-api-key", objectLimit: ObjectLimit = .total(75)) throws {
        self.apiKey = apiKey
        self.objectLimit = objectLimit
        let storage = self.storage
        server = try LoopbackHTTPServer { request in
            Self.handle(request, apiKey: apiKey, limit: objectLimit, storage: storage)
        }
    }

    /// Stops the server and its threads.
    public func stop() { server.stop() }

    // MARK: Scripting and inspection

    /// Makes the next `count` requests fail with `failure` (after failures already scripted).
    public func fail(next count: Int = 1, with failure: Failure) {
        storage.update { $0.script.append(contentsOf: Array(repeating: failure, count: count)) }
    }

    /// Every request so far, in arrival order.
    public var requests: [RecordedRequest] { storage.value.requests }
    /// Accepted attribute objects.
    public var acceptedAttributes: [Value] { storage.value.attributes }
    /// Accepted event objects.
    public var acceptedEvents: [Value] { storage.value.events }
    /// Accepted purchase objects.
    public var acceptedPurchases: [Value] { storage.value.purchases }
    /// Accepted `aliases_to_identify` objects of `/users/identify` requests, in order of arrival.
    public var identifiedAliases: [Value] { storage.value.identified }
    /// Accepted objects of every kind.
    public var acceptedObjectCount: Int {
        let state = storage.value
        return state.attributes.count + state.events.count + state.purchases.count
    }
    /// Contract violations found (each was answered with 400 or listed in `errors`); empty for a correct client.
    public var violations: [String] { storage.value.violations }

    /// Returns once at least `count` objects were accepted (at once if they were), or when the calling task is
    /// cancelled.
    public func waitForAcceptedObjects(_ count: Int) async {
        await storage.wait { $0.attributes.count + $0.events.count + $0.purchases.count >= count }
    }

    /// Returns once at least `count` requests were answered (at once if they were), or when the calling task
    /// is cancelled.
    public func waitForRequests(_ count: Int) async {
        await storage.wait { $0.requests.count >= count }
    }

    // MARK: Handling

    private static func answer(_ status: Int, _ message: String, errors: [Any] = []) -> LoopbackHTTPServer.Response {
        var object: [String: Any] = ["message": message]
        if !errors.isEmpty { object["errors"] = errors }
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return .json(String(decoding: data, as: UTF8.self), status: status)
    }

    private static func handle(
        _ request: LoopbackHTTPServer.Request,
        apiKey: String,
        limit: ObjectLimit,
        storage: AwaitableState<State>
    ) -> LoopbackHTTPServer.Response {
        var record = RecordedRequest(
            status: 0,
            path: request.path,
            authorization: request.headers["Authorization"],
            contentType: request.headers["Content-Type"]
        )
        let json = try? JSONSerialization.jsonObject(with: request.body)
        if let json { record.body = convert(json) }
        if let body = json as? [String: Any] {
            record.attributes = (body["attributes"] as? [Any])?.count ?? 0
            record.events = (body["events"] as? [Any])?.count ?? 0
            record.purchases = (body["purchases"] as? [Any])?.count ?? 0
        }
        let failure = storage.update { state -> Failure? in
            guard request.method == "POST", ["/users/track", "/users/identify"].contains(request.path),
                !state.script.isEmpty
            else { return nil }
            return state.script.removeFirst()
        }
        var violations: [String] = []
        var accepted: (attributes: [Value], events: [Value], purchases: [Value]) = ([], [], [])
        var identified: [Value] = []
        let response: LoopbackHTTPServer.Response
        if let failure {
            record.failure = failure
            switch failure {
            case .serverError(let status): response = answer(status, "Internal Server Error")
            case .rateLimited(let retryAfter):
                var r = answer(429, "Rate limit exceeded")
                if let retryAfter { r.headers.add("Retry-After", retryAfter) }
                response = r
            case .badRequest(let message, let errors): response = answer(400, message, errors: errors)
            case .refuse(let status, let location):
                var r = answer(status, "Request refused")
                if let location { r.headers.add("Location", location) }
                response = r
            case .hang: response = .fault(.hang)
            case .closeConnection: response = .fault(.closeWithoutResponse)
            case .garbage: response = .fault(.garbage(Data("\u{1}\u{2}not http at all\r\n\r\n".utf8)))
            }
        } else if request.path == "/users/identify", request.method == "POST",
            request.headers["Authorization"] == "Bearer \(apiKey)"
        {
            let problems = checkIdentify(json)
            violations += problems
            if problems.isEmpty, let body = json as? [String: Any], let aliases = body["aliases_to_identify"] as? [Any]
            {
                identified = aliases.map(convert)
                response = answer(201, "success")
            } else {
                response = answer(400, problems.first ?? "Invalid request", errors: problems)
            }
        } else if request.path != "/users/track" {
            violations.append("request to unknown path '\(request.path)'")
            response = answer(404, "Not found: '\(request.path)'")
        } else if request.method != "POST" {
            violations.append("method '\(request.method)' instead of 'POST'")
            response = answer(405, "Method not allowed: '\(request.method)'")
        } else if request.headers["Authorization"] != "Bearer \(apiKey)" {
            violations.append("authorization '\(request.headers["Authorization"] ?? "")' is not the bearer key")
            response = answer(401, "Invalid API key: \(request.headers["Authorization"] ?? "(none)")")
        } else if request.headers["Content-Type"]?.lowercased().hasPrefix("application/json") != true {
            violations.append("content type '\(request.headers["Content-Type"] ?? "")' is not application/json")
            response = answer(400, "Content-Type must be application/json")
        } else if let body = json as? [String: Any] {
            var requestErrors: [String] = []
            for key in body.keys where !["attributes", "events", "purchases", "app_id"].contains(key) {
                requestErrors.append("unknown top-level field '\(key)'")
            }
            var arrays: [String: [Any]] = [:]
            for name in ["attributes", "events", "purchases"] {
                guard let value = body[name] else { continue }
                guard let list = value as? [Any] else {
                    requestErrors.append("'\(name)' must be an array")
                    continue
                }
                arrays[name] = list
            }
            let counts = ["attributes", "events", "purchases"].map { arrays[$0]?.count ?? 0 }
            let total = counts.reduce(0, +)
            if total == 0 { requestErrors.append("no objects in 'attributes', 'events' or 'purchases'") }
            switch limit {
            case .total(let maximum) where total > maximum:
                requestErrors.append("\(total) objects in one request; the limit is \(maximum)")
            case .perCategory(let maximum) where counts.contains { $0 > maximum }:
                requestErrors.append("more than \(maximum) objects of one kind in a request: \(counts)")
            default: break
            }
            if !requestErrors.isEmpty {
                violations += requestErrors
                response = answer(400, requestErrors[0], errors: requestErrors)
            } else {
                var objectErrors: [[String: Any]] = []
                for name in ["attributes", "events", "purchases"] {
                    for (index, element) in (arrays[name] ?? []).enumerated() {
                        let problems = check(element, in: name)
                        if problems.isEmpty {
                            let value = convert(element)
                            switch name {
                            case "attributes": accepted.attributes.append(value)
                            case "events": accepted.events.append(value)
                            default: accepted.purchases.append(value)
                            }
                        } else {
                            for problem in problems {
                                violations.append("\(name)[\(index)]: \(problem)")
                                objectErrors.append(["type": problem, "input_array": name, "index": index])
                            }
                        }
                    }
                }
                if accepted.attributes.isEmpty && accepted.events.isEmpty && accepted.purchases.isEmpty {
                    response = answer(400, "No valid objects", errors: objectErrors)
                } else {
                    response = answer(201, "success", errors: objectErrors)
                }
            }
        } else {
            violations.append("body is not a json object")
            response = answer(400, "Invalid JSON body")
        }
        record.status = response.fault == nil ? response.status : 0
        storage.update { state in
            state.requests.append(record)
            state.attributes += accepted.attributes
            state.events += accepted.events
            state.purchases += accepted.purchases
            state.identified += identified
            state.violations += violations
        }
        return response
    }

    // MARK: Contract

    /// The problems of a `/users/identify` body (none for a correct one).
    private static func checkIdentify(_ json: Any?) -> [String] {
        guard let body = json as? [String: Any] else { return ["body is not a json object"] }
        var problems: [String] = []
        for key in body.keys where !["aliases_to_identify", "merge_behavior"].contains(key) {
            problems.append("unknown top-level field '\(key)' in /users/identify")
        }
        if let behavior = body["merge_behavior"], !["none", "merge"].contains(behavior as? String ?? "") {
            problems.append("merge_behavior must be 'none' or 'merge'")
        }
        guard let aliases = body["aliases_to_identify"] as? [Any], !aliases.isEmpty else {
            return problems + ["aliases_to_identify must be a non-empty array"]
        }
        if aliases.count > 50 { problems.append("\(aliases.count) aliases in one request; the limit is 50") }
        for (index, element) in aliases.enumerated() {
            guard let object = element as? [String: Any], object["external_id"] is String,
                let alias = object["user_alias"] as? [String: Any], alias["alias_name"] is String,
                alias["alias_label"] is String, object.count == 2, alias.count == 2
            else {
                problems.append(
                    "aliases_to_identify[\(index)] is not {external_id, user_alias {alias_name, alias_label}}"
                )
                continue
            }
        }
        return problems
    }

    private static func isBool(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return type(of: number) == type(of: NSNumber(value: true))
    }

    private static func isNumber(_ value: Any) -> Bool { value is NSNumber && !isBool(value) }

    private static func isInteger(_ value: Any) -> Bool {
        guard isNumber(value), let number = value as? NSNumber else { return false }
        let type = String(cString: number.objCType)
        return type != "d" && type != "f"
    }

    private static func length(_ text: String) -> Int { text.utf16.count }

    private static let isoTime = try! NSRegularExpression(
        pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$"#
    )

    private static func isISOTime(_ value: Any) -> Bool {
        guard let text = value as? String else { return false }
        return isoTime.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// The problems of one object of array `name`.
    private static func check(_ element: Any, in name: String) -> [String] {
        guard let object = element as? [String: Any] else { return ["object is not a json object"] }
        var problems: [String] = []
        let identifiers = ["external_id", "braze_id", "user_alias"].filter { object[$0] != nil }
        if identifiers.count != 1 {
            problems.append("needs exactly one of 'external_id', 'braze_id', 'user_alias'; has \(identifiers)")
        }
        for key in ["external_id", "braze_id"] {
            if let id = object[key], (id as? String)?.isEmpty != false {
                problems.append("'\(key)' must be a non-empty string")
            }
        }
        if let alias = object["user_alias"] {
            let map = alias as? [String: Any]
            if (map?["alias_name"] as? String)?.isEmpty != false || (map?["alias_label"] as? String)?.isEmpty != false {
                problems.append("'user_alias' needs string 'alias_name' and 'alias_label'")
            }
        }
        if let flag = object["_update_existing_only"], !isBool(flag) {
            problems.append("'_update_existing_only' must be a boolean")
        }
        let common: Set<String> = ["external_id", "braze_id", "user_alias", "_update_existing_only", "app_id"]
        switch name {
        case "events":
            if let name = object["name"] as? String, !name.isEmpty, length(name) <= 255 {
            } else {
                problems.append("'name' must be a string of 1–255 characters")
            }
            if !isISOTime(object["time"] as Any) {
                problems.append("'time' must be an iso-8601 time, got '\(object["time"] ?? "nothing")'")
            }
            problems += checkProperties(object["properties"])
            for key in object.keys where !common.contains(key) && !["name", "time", "properties"].contains(key) {
                problems.append("unknown event field '\(key)'")
            }
        case "purchases":
            if let id = object["product_id"] as? String, !id.isEmpty, length(id) <= 255 {
            } else {
                problems.append("'product_id' must be a string of 1–255 characters")
            }
            let currency = object["currency"] as? String ?? ""
            if currency.count != 3 || !currency.allSatisfy({ $0.isASCII && $0.isUppercase }) {
                problems.append("'currency' must be an iso-4217 alphabetic code, got '\(currency)'")
            }
            if !isNumber(object["price"] as Any) { problems.append("'price' must be a number") }
            if let quantity = object["quantity"] {
                if !isInteger(quantity) || !(1...100).contains((quantity as? NSNumber)?.intValue ?? 0) {
                    problems.append("'quantity' must be an integer in 1–100, got '\(quantity)'")
                }
            }
            if !isISOTime(object["time"] as Any) { problems.append("'time' must be an iso-8601 time") }
            problems += checkProperties(object["properties"])
            let known: Set<String> = ["product_id", "currency", "price", "quantity", "time", "properties"]
            for key in object.keys where !common.contains(key) && !known.contains(key) {
                problems.append("unknown purchase field '\(key)'")
            }
        default:
            for (key, value) in object where !common.contains(key) {
                problems += checkAttribute(key, value)
            }
        }
        return problems
    }

    private static func checkProperties(_ value: Any?) -> [String] {
        guard let value else { return [] }
        guard let properties = value as? [String: Any] else { return ["'properties' must be an object"] }
        var problems: [String] = []
        var nested = false
        for (key, value) in properties {
            if key.isEmpty || length(key) > 255 {
                problems.append("property key '\(key)' must have 1–255 characters")
            }
            if key.hasPrefix("$") { problems.append("property key '\(key)' starts with '$'") }
            if value is NSNull { problems.append("property '\(key)' is null") }
            if let text = value as? String, length(text) > 255 {
                problems.append("property '\(key)' is longer than 255")
            }
            if value is [Any] || value is [String: Any] { nested = true }
        }
        if nested, let data = try? JSONSerialization.data(withJSONObject: properties), data.count > 50 * 1024 {
            problems.append("properties with arrays or objects are larger than 50 KB")
        }
        return problems
    }

    private static func checkAttribute(_ key: String, _ value: Any) -> [String] {
        var problems: [String] = []
        if key.isEmpty || length(key) > 255 { problems.append("attribute key '\(key)' must have 1–255 characters") }
        let consent = ["$google_ad_user_data", "$google_ad_personalization"]
        if key.hasPrefix("$") && !(consent.contains(key) && isBool(value)) {
            problems.append("attribute key '\(key)' starts with '$'")
        }
        if let text = value as? String, length(text) > 255 { problems.append("attribute '\(key)' is longer than 255") }
        if let list = value as? [Any] {
            for element in list where !(element is String || element is [String: Any]) {
                problems.append("array attribute '\(key)' holds a non-string '\(element)'")
            }
        }
        if let map = value as? [String: Any] {
            if let amount = map["inc"] {
                if map.count != 1 || !isInteger(amount) {
                    problems.append("'\(key)': 'inc' must be the only field, an integer")
                }
            } else if let list = map["add"] ?? map["remove"] {
                if map.count != 1 || !((list as? [Any])?.allSatisfy { $0 is String } ?? false) {
                    problems.append("'\(key)': 'add'/'remove' must be the only field, an array of strings")
                }
            }
        }
        guard !(value is NSNull) else { return problems }
        let text = value as? String
        switch key {
        case "email":
            let parts = text?.split(separator: "@", omittingEmptySubsequences: false) ?? []
            if parts.count != 2 || parts[0].isEmpty || !parts[1].contains(".") || text!.contains(" ") {
                problems.append("email '\(value)' is not an email address")
            }
        case "gender":
            if !["M", "F", "O", "N", "P"].contains(text ?? "") {
                problems.append("gender '\(value)' is not M, F, O, N or P")
            }
        case "dob":
            if text?.range(of: #"^\d{4}-\d{2}-\d{2}$"#, options: .regularExpression) == nil {
                problems.append("dob '\(value)' is not YYYY-MM-DD")
            }
        case "country":
            if text?.count != 2 || text?.uppercased() != text {
                problems.append("country '\(value)' is not iso-3166-1 alpha-2")
            }
        case "language":
            if text?.count != 2 { problems.append("language '\(value)' is not iso-639-1") }
        case "email_subscribe", "push_subscribe":
            if !["opted_in", "subscribed", "unsubscribed"].contains(text ?? "") {
                problems.append("\(key) '\(value)' is not opted_in, subscribed or unsubscribed")
            }
        case "first_name", "last_name", "home_city", "phone":
            if text == nil { problems.append("'\(key)' must be a string") }
        default:
            break
        }
        return problems
    }

    /// Foundation JSON to ``Value`` (booleans, integers and floats kept apart).
    private static func convert(_ any: Any) -> Value {
        switch any {
        case let s as String: return .string(s)
        case let n as NSNumber:
            if isBool(n) { return .bool(n.boolValue) }
            let type = String(cString: n.objCType)
            if type == "d" || type == "f" { return .double(n.doubleValue) }
            return .int(n.int64Value)
        case let a as [Any]: return .array(a.map(convert))
        case let d as [String: Any]:
            var map = ValueMap()
            for key in d.keys.sorted() { map[key] = convert(d[key]!) }
            return .object(map)
        default: return .null
        }
    }
}
