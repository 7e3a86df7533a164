public import ContainerKit
import ContainerKitDelivery
public import Foundation

/// The Braze tag provider: a Function Call tag handler that turns Braze tags into typed
/// ``AnalyticsRecord``s and hands them to a sink — the pattern of Braze's own GTM integration.
///
/// Each call reports what it did in its ``TagOutput`` (``perform(_:)``): the records (each an
/// ``AnalyticsRecord``, a `TagRecord`), the rule violations as `problems`, a `dropReason` when the call was
/// dropped (the tag's status is then `dropped`, not `ok`), and the ``DurabilityToken`` the sink returned
/// (a durable ``DeliveryPipeline``'s), so `PushResult.waitUntilDurable()` waits for exactly this push's records.
///
/// Register it under the class paths your containers use, and give each session its user:
///
/// ```swift
/// let sink = DeliveryPipeline.inMemory(destination: BrazeUsersTrackDestination(endpoint: endpoint, apiKey: key))
/// let braze = BrazeTagProvider(sink: sink)
/// braze.register(on: tagManager)            // BrazeGTMTagManager, com.appboy.googletagmanager.BrazeGtmTagProvider
/// let session = tagManager.makeDataLayer()
/// BrazeTagProvider.setUser(.brazeID("b-123"), on: session)
/// session.push(event: "played song", parameters: ["genre": "jazz"])
/// ```
///
/// **Records wait for their user.** Braze's `/users/track` refuses a record that names no user, so the records
/// of a call in a session without one (no ``setUser(_:on:)``, no `changeUser` tag fired yet) are kept
/// **pending in the session** — the session attribute ``pendingAttributeKey``, saved with the session like
/// any attribute — and the tag's status is `pending`, not `ok`. The push that gives the session its user (a
/// `changeUser` tag, or the host's ``setUser(_:on:)`` before it) releases them: in their original order, with
/// their original times and IDs, for that user, as records of that push (committed with it). At most
/// ``Configuration/maximumPendingRecords`` (100) wait, for at most ``Configuration/maximumPendingAge``
/// (24 h); past either bound the oldest are dropped, said in the outcome and counted
/// (``pendingStatistics``). ``Configuration/withoutUser`` `.alias(label:)` sends them at once for a user
/// alias instead; the push that gives such a session its `external_id` (a `changeUser` tag, or
/// ``setUser(_:on:)``) then adds an `identify` record, which the `/users/track` destination sends to
/// `/users/identify` after the alias's records (see ``endOfPush(_:)``). A `changeUser` tag needs no user.
///
/// ## Actions
/// The tag's `actionType` parameter picks the action (see ``BrazeActionType`` for each one's parameters).
/// A missing or unknown `actionType` is a warning and does nothing.
///
/// ## Rules
/// Braze's rules are checked before anything is sent: keys and strings at most 255 characters, no
/// leading `$` in property or attribute keys (except Google's consent flags), ISO-4217 currencies,
/// quantities 1–100, finite numbers, plausible emails, the formats of standard fields, properties with
/// arrays or objects at most 50 KB. A call that breaks any rule is dropped whole, with one warning naming
/// the tag, each offending key and each rule (``BrazeRuleViolation``); other tags are unaffected. The
/// warning is rate-limited per tag and rule: the first is logged at once, repeats at most once per
/// `warningInterval` with the count of those held back.
///
/// ## Dates
/// A custom attribute is a date only when the tag says so: `customAttributeType` (or `valueType`) is
/// `date` and `customAttributeValue` is an ISO-8601 date or time. Strings are never guessed to be dates.
/// `customAttributeType` may also be `string`, `integer`, `double`, `boolean` or `array`, converting
/// strings such as `"42"` or `"true"`; without it the value's own type is used.
///
/// ## Identity
/// Each session keeps its user once, typed (``user(of:)``), saved as the session attribute ``userAttributeKey``.
/// Before `changeUser`, it is whatever the host set with ``setUser(_:on:)`` (a `braze_id` or a user alias) or,
/// with ``Configuration/sessionIDIsExternalID``, the session's ID as `external_id`; `changeUser` makes it the
/// given `external_id` and emits a `change_user` record (changing to the current ID again does nothing). Every
/// record carries the session's user at the time it was made, or no identity if the host gave none.
public struct BrazeTagProvider: FunctionCallTagHandler, PushHook {
    /// The class paths Braze's GTM integrations use: `BrazeGTMTagManager` and
    /// `com.appboy.googletagmanager.BrazeGtmTagProvider`.
    public static let defaultClassPaths = ["BrazeGTMTagManager", "com.appboy.googletagmanager.BrazeGtmTagProvider"]

    /// The session attribute that saves the session's current user, as ``UserIdentity/jsonValue`` (in snapshots,
    /// sessions files and deltas; the session itself keeps the user typed).
    public static let userAttributeKey = "braze.user"

    /// Where records go.
    public let sink: any AnalyticsSink
    /// What the provider does in sessions without a user.
    public let configuration: Configuration
    let clock: @Sendable () -> Date
    let ids: AnalyticsRecordIDGenerator
    let warnings: LogLimiter
    let counters = PendingCounters()

    /// Creates a provider.
    /// - Parameters:
    ///   - sink: where every record goes (synchronously, from the tag handler).
    ///   - configuration: what happens to the records of sessions without a user (held, by default).
    ///   - clock: the wall-clock time records are stamped with (a calendar date, which Braze needs) when their push
    ///     does not say when its event happened (``FunctionCall/eventTime``), and that pending records' ages are
    ///     measured on; the current time by default.
    ///   - idGenerator: where record IDs come from.
    ///   - warningInterval: how often, at most, the same warning (per tag and rule) is logged again (60 s).
    ///   - warningClock: the clock of that interval.
    public init<C: Clock>(
        sink: any AnalyticsSink,
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Date = { Date() },
        idGenerator: AnalyticsRecordIDGenerator = AnalyticsRecordIDGenerator(),
        warningInterval: Duration = .seconds(60),
        warningClock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.sink = sink
        self.configuration = configuration
        self.clock = clock
        self.ids = idGenerator
        self.warnings = LogLimiter(
            logger: StandardErrorLogger(),
            interval: warningInterval,
            elapsed: DeliveryClock(warningClock).elapsed
        )
    }

    /// The name this provider's push hook is registered under (see ``endOfPush(_:)``).
    public static let pushHookName = "com.braze.containerkit.pending"

    /// Registers this provider on `tagManager` for each of `classPaths`, and as the push hook that releases
    /// pending records (``endOfPush(_:)``, under ``pushHookName``).
    public func register(on tagManager: TagManager, classPaths: [String] = BrazeTagProvider.defaultClassPaths) {
        sink.inherit(logger: tagManager.logger, observer: tagManager.observer as? any DeliveryObserver)
        for path in classPaths { tagManager.register(tagHandler: self, for: path) }
        tagManager.register(pushHook: self, for: Self.pushHookName)
    }

    // MARK: Identity

    /// Sets (or with `nil`, clears) the user of `dataLayer`'s session: typically a `braze_id` or user alias
    /// before the app knows who the user is, or the `external_id` a service knows its user by.
    /// `changeUser` tags replace it with an `external_id`.
    ///
    /// Records held for the session while it had no user are released for this user by the next push of
    /// the session (at its end, with its records: see ``endOfPush(_:)``), whether or not a Braze tag fires in
    /// it — call this before the push, as a service's `prepare` does. Between pushes they stay pending.
    public static func setUser(_ user: UserIdentity?, on dataLayer: DataLayer) {
        dataLayer.setExtensionValue(user, for: UserKey.self)
    }

    /// The current user of `dataLayer`'s session, if any (kept once, typed, on the session; saved in snapshots as
    /// the ``userAttributeKey`` attribute).
    public static func user(of dataLayer: DataLayer) -> UserIdentity? {
        dataLayer.extensionValue(UserKey.self)
    }

    /// The session's user, stored once as a ``UserIdentity`` (not parsed from its attribute by every tag).
    enum UserKey: SessionExtensionKey {
        static var attributeKey: String { BrazeTagProvider.userAttributeKey }
        static func attribute(for user: UserIdentity) -> Value { user.jsonValue }
        static func stored(fromAttribute attribute: Value) -> UserIdentity? {
            guard case .object(let members) = attribute else { return nil }
            return UserIdentity(members: members)
        }
    }

    // MARK: Running tags

    /// Runs one Braze tag (see ``perform(_:)``).
    public func execute(_ call: FunctionCall) throws {
        _ = try perform(call)
    }

    /// Runs one Braze tag: builds its records and hands them to the sink, holds them in the session while it
    /// has no user (see the type's documentation), or drops the call with a (rate-limited) warning saying why.
    /// - Returns: the records, the rule violations, the drop or pending reason and the sink's durability token.
    /// - Throws: ``AnalyticsSinkError`` when the sink refused the records (queue full, shut down); the
    ///   tag's status is then `failed`.
    public func perform(_ call: FunctionCall) throws -> TagOutput {
        // The tag's name is only spelled out for a warning (every call that goes through would pay for it).
        var tag: String { Self.tagName(call) }
        guard let actionValue = call.arguments["actionType"] else {
            return drop(
                call,
                key: "missing_action",
                "dropped a braze tag: it has no actionType",
                reason: "\(tag): missing parameter 'actionType'; nothing sent"
            )
        }
        guard case .string(let actionName) = actionValue, let action = BrazeActionType(rawValue: actionName) else {
            return drop(
                call,
                key: "unknown_action",
                "dropped a braze tag: unknown actionType",
                reason: "\(tag): unknown actionType '\(actionValue.jsString)'; nothing sent",
                metadata: ["action": actionValue.jsString]
            )
        }
        // The session's user, read once for the call (and named by the session ID when so configured).
        var user = namedBySessionID(Self.user(of: call.dataLayer), call.dataLayer)
        // Braze's /users/track refuses a record that names no user: without a user the records wait in the
        // session (or go to the session's alias, or with no room to hold any, the call is dropped now rather
        // than at delivery, after the push had answered "ok").
        var holds = false
        if user == nil && action != .changeUser {
            switch configuration.withoutUser {
            case .alias(let label):
                let alias = UserIdentity.userAlias(name: call.dataLayer.sessionID, label: label)
                Self.setUser(alias, on: call.dataLayer)
                // Remembered until the session's user is an external ID, which the push then identifies.
                call.dataLayer.setExtensionValue(alias, for: AliasKey.self)
                user = alias
            case .hold where configuration.maximumPendingRecords > 0:
                holds = true
            case .hold:
                return drop(
                    call,
                    key: "no_user",
                    "dropped a braze tag: the session has no braze user",
                    reason: "\(tag): dropped '\(action.rawValue)': the session has no Braze user; give it one with "
                        + "BrazeTagProvider.setUser(_:on:) or fire a changeUser tag first",
                    metadata: ["action": action.rawValue]
                )
            }
        }
        var rules = BrazeRules()
        // When the event happened, when its push says (a client's timestamp); otherwise now.
        let time = call.eventTime ?? clock()
        let records = Self.makeRecords(
            action,
            call.arguments,
            user: user,
            &rules,
            // A closure, not the method itself: a method reference copies the provider into a new context.
            record: { user, payload in record(user, payload, at: time) }
        )
        guard rules.violations.isEmpty else {
            let name = tag
            let reasons = rules.violations.map(\.description).joined(separator: "; ")
            let reason = "\(name): dropped '\(action.rawValue)': \(reasons)"
            let key = rules.violations.map(\.rule.rawValue).joined(separator: ",")
            warnings.log(
                .warning,
                key: "\(name)|\(key)",
                "dropped a braze tag: it breaks braze rules",
                metadata: Self.metadata(call).merging(["action": action.rawValue, "rules": key, "reason": reason]) {
                    $1
                },
                to: call.logger
            )
            return TagOutput(problems: rules.violations.map(\.description), dropReason: reason)
        }
        if case .changeUser(let externalID, _)? = records.first?.payload {
            Self.setUser(.externalID(externalID), on: call.dataLayer)
        }
        guard !records.isEmpty else { return .none }
        if holds { return hold(records, action: action, call) }
        // Encoded once: the sink stores these bytes and the push's answer copies them.
        let encoded = EncodedRecords(records)
        let token = try sink.enqueue(encoded)
        // Boxed one by one where the type is known (an implicit array conversion casts each at run time).
        return TagOutput(
            records: records.map { $0 as any TagRecord },
            durability: token,
            recordsJSON: encoded.recordsJSON
        )
    }

    /// The structured context of a warning about `call`: container, session, tag (ID and name) and class path.
    static func metadata(_ call: FunctionCall) -> LogMetadata {
        var metadata: LogMetadata = [
            "container": call.containerID, "session": call.dataLayer.sessionID, "class_path": call.name,
        ]
        if let tagID = call.tagID { metadata["tag"] = String(tagID) }
        if let name = call.displayName { metadata["tag_name"] = name }
        return metadata
    }

    /// Drops `call` with the (rate-limited) warning `message`, a constant sentence; `reason` (the tag's drop
    /// reason, naming the tag and the offending value) travels in its `reason` metadata beside `metadata`.
    private func drop(
        _ call: FunctionCall,
        key: String,
        _ message: String,
        reason: String,
        metadata: LogMetadata = [:]
    ) -> TagOutput {
        warnings.log(
            .warning,
            key: "\(Self.tagName(call))|\(key)",
            message,
            metadata: Self.metadata(call).merging(metadata) { $1 }.merging(["reason": reason]) { $1 },
            to: call.logger
        )
        return TagOutput(problems: [reason], dropReason: reason)
    }

    /// `braze tag 'Name' (tag 7)`, `braze tag 7` or `braze tag 'com.example.Path'`, for warnings.
    static func tagName(_ call: FunctionCall) -> String {
        switch (call.displayName, call.tagID) {
        case (let name?, let id?): return "braze tag '\(name)' (tag \(id))"
        case (let name?, nil): return "braze tag '\(name)'"
        case (nil, let id?): return "braze tag \(id)"
        case (nil, nil): return "braze tag '\(call.name)'"
        }
    }

    private func record(_ user: UserIdentity?, _ payload: AnalyticsRecord.Payload, at time: Date) -> AnalyticsRecord {
        AnalyticsRecord(id: ids.next(), time: time, user: user, payload: payload)
    }

    /// The records of one call of `action` with `arguments`, checking every Braze rule into `rules` on the
    /// way: the one rule checker, shared by ``perform(_:)`` and lint (``BrazeRules/violations(of:arguments:)``).
    /// The arguments of `logEvent` and `logPurchase` that are not properties (made once, not per call).
    private static let eventParameters: [String] = ["actionType", "eventName"]
    private static let purchaseParameters: [String] = ["actionType", "productId", "currency", "price", "quantity"]

    static func makeRecords(
        _ action: BrazeActionType,
        _ arguments: ValueMap,
        user: UserIdentity?,
        _ rules: inout BrazeRules,
        record: (UserIdentity?, AnalyticsRecord.Payload) -> AnalyticsRecord
    ) -> [AnalyticsRecord] {
        switch action {
        case .logEvent:
            let name = rules.requiredString(arguments, "eventName")
            let properties = rules.properties(
                arguments,
                excluding: Self.eventParameters,
                reserved: BrazeRules.eventReservedKeys
            )
            guard let name else { return [] }
            return [record(user, .customEvent(name: name, properties: properties))]

        case .logPurchase:
            let productID = rules.requiredString(arguments, "productId", acceptsIntegers: true)
            var currency: String?
            if let code = rules.requiredString(arguments, "currency") {
                let upper = code.uppercased()
                if ISO4217.codes.contains(upper) {
                    currency = upper
                } else {
                    rules.fail(.invalidCurrency, "currency", "'\(code)' is not an iso-4217 currency code")
                }
            }
            var price: Double?
            if let value = arguments["price"] {
                price = rules.number(value, key: "price")
            } else {
                rules.fail(.missingParameter, "price", "missing parameter 'price'")
            }
            var quantity = 1
            if let value = arguments["quantity"], let count = rules.integer(value, key: "quantity") {
                if (1...100).contains(count) {
                    quantity = Int(count)
                } else {
                    rules.fail(.quantityOutOfRange, "quantity", "quantity '\(count)' is outside 1–100")
                }
            }
            let properties = rules.properties(
                arguments,
                excluding: Self.purchaseParameters,
                reserved: BrazeRules.purchaseReservedKeys
            )
            guard let productID, let currency, let price else { return [] }
            return [
                record(
                    user,
                    .purchase(
                        productID: productID,
                        currency: currency,
                        price: price,
                        quantity: quantity,
                        properties: properties
                    )
                )
            ]

        case .customAttribute:
            guard let key = customAttributeKey(arguments, &rules) else { return [] }
            guard let value = arguments["customAttributeValue"] else {
                rules.fail(.missingParameter, "customAttributeValue", "missing parameter 'customAttributeValue'")
                return []
            }
            let type = arguments["customAttributeType"] ?? arguments["valueType"]
            guard let attribute = rules.customAttributeValue(value, type: type, key: key) else { return [] }
            if BrazeRules.consentKeys.contains(key), attribute.jsonValue.boolValue == nil {
                rules.fail(.invalidType, key, "consent attribute '\(key)' must be a boolean")
                return []
            }
            return [record(user, .customAttribute(key: key, operation: .set(attribute)))]

        case .incrementCustomAttribute:
            guard let key = customAttributeKey(arguments, &rules, allowsConsentKeys: false) else { return [] }
            var amount: Int64 = 1
            if let value = arguments["incrementValue"] ?? arguments["customAttributeValue"] {
                guard let count = rules.integer(value, key: "incrementValue") else { return [] }
                amount = count
            }
            return [record(user, .customAttribute(key: key, operation: .increment(amount)))]

        case .addToCustomAttributeArray, .removeFromCustomAttributeArray:
            guard let key = customAttributeKey(arguments, &rules, allowsConsentKeys: false) else { return [] }
            guard let value = arguments["customAttributeValue"] else {
                rules.fail(.missingParameter, "customAttributeValue", "missing parameter 'customAttributeValue'")
                return []
            }
            guard let list = rules.stringList(value, key: key, singleStringAllowed: true) else { return [] }
            let operation: CustomAttributeOperation =
                action == .addToCustomAttributeArray ? .addToArray(list) : .removeFromArray(list)
            return [record(user, .customAttribute(key: key, operation: operation))]

        case .setUserAttribute:
            return userAttributeRecords(arguments, user, &rules, record: record)

        case .changeUser:
            let externalID: String
            switch arguments["externalUserId"] {
            case nil:
                rules.fail(.missingParameter, "externalUserId", "missing parameter 'externalUserId'")
                return []
            case .string(let id)?: externalID = id
            case .int(let id)?: externalID = String(id)
            case let other?:
                rules.fail(.invalidType, "externalUserId", "'externalUserId' must be a string, not \(other.typeName)")
                return []
            }
            if externalID.isEmpty {
                rules.fail(.empty, "externalUserId", "'externalUserId' is empty")
                return []
            }
            if externalID.utf8.count > BrazeRules.maximumExternalIDBytes {
                rules.fail(
                    .tooLong,
                    "externalUserId",
                    "external id is \(externalID.utf8.count) bytes long; "
                        + "the limit is \(BrazeRules.maximumExternalIDBytes)"
                )
                return []
            }
            if user == .externalID(externalID) { return [] }
            return [record(nil, .changeUser(externalID: externalID, previousUser: user))]
        }
    }

    private static func customAttributeKey(
        _ arguments: ValueMap,
        _ rules: inout BrazeRules,
        allowsConsentKeys: Bool = true
    )
        -> String?
    {
        guard let value = arguments["customAttributeKey"] else {
            rules.fail(.missingParameter, "customAttributeKey", "missing parameter 'customAttributeKey'")
            return nil
        }
        guard case .string(let key) = value else {
            rules.fail(
                .invalidType,
                "customAttributeKey",
                "'customAttributeKey' must be a string, not \(value.typeName)"
            )
            return nil
        }
        guard rules.checkedKey(key, kind: "custom attribute", allowsConsentKeys: allowsConsentKeys) else { return nil }
        guard !BrazeRules.attributesObjectKeys.contains(key) else {
            rules.fail(
                .reservedKey,
                key,
                "custom attribute key '\(key)' is a field of braze's user profile or of /users/track's attributes "
                    + "object, which it would set instead (standard fields: actionType 'setUserAttribute')"
            )
            return nil
        }
        return key
    }

    private static func userAttributeRecords(
        _ arguments: ValueMap,
        _ user: UserIdentity?,
        _ rules: inout BrazeRules,
        record: (UserIdentity?, AnalyticsRecord.Payload) -> AnalyticsRecord
    ) -> [AnalyticsRecord] {
        var fields: [(BrazeStandardAttribute, Value, String)] = []
        if let keyValue = arguments["userAttributeKey"] {
            if case .string(let name) = keyValue, let field = BrazeStandardAttribute(parameterName: name) {
                if let value = arguments["userAttributeValue"] {
                    fields.append((field, value, name))
                } else {
                    rules.fail(.missingParameter, "userAttributeValue", "missing parameter 'userAttributeValue'")
                }
            } else {
                rules.fail(
                    .unknownAttribute,
                    "userAttributeKey",
                    "'\(keyValue.jsString)' is not a braze standard attribute"
                )
            }
        }
        for (name, value) in arguments where !["actionType", "userAttributeKey", "userAttributeValue"].contains(name) {
            guard let field = BrazeStandardAttribute(parameterName: name) else {
                rules.fail(.unknownAttribute, name, "'\(name)' is not a braze standard attribute")
                continue
            }
            fields.append((field, value, name))
        }
        if fields.isEmpty && rules.violations.isEmpty {
            rules.fail(.missingParameter, "userAttributeKey", "no standard attribute given")
        }
        var records: [AnalyticsRecord] = []
        for (field, value, key) in fields {
            if let normalized = rules.standardAttribute(field, value, key: key) {
                records.append(record(user, .userAttribute(field, value: normalized)))
            }
        }
        return records
    }
}
