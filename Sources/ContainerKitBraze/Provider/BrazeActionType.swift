/// The `actionType` parameter of a Braze Function Call tag: what the tag does.
public enum BrazeActionType: String, Sendable, Hashable, CaseIterable {
    /// `logEvent`: a custom event named by `eventName`; every other parameter (except `actionType`)
    /// becomes a property, with its type kept.
    case logEvent
    /// `customAttribute`: sets `customAttributeKey` to `customAttributeValue` (string, integer, double,
    /// boolean, array of strings, `null` to remove; a date when `customAttributeType` is `date`).
    case customAttribute
    /// `changeUser`: the session's user becomes `externalUserId`.
    case changeUser
    /// `logPurchase`: `productId`, `currency`, `price`, optional `quantity` (default 1); other
    /// parameters become properties.
    case logPurchase
    /// `incrementCustomAttribute`: adds `incrementValue` (or `customAttributeValue`; default 1) to the
    /// integer attribute `customAttributeKey`.
    case incrementCustomAttribute
    /// `addToCustomAttributeArray`: adds `customAttributeValue` (a string or array of strings).
    case addToCustomAttributeArray
    /// `removeFromCustomAttributeArray`: removes `customAttributeValue` (a string or array of strings).
    case removeFromCustomAttributeArray
    /// `setUserAttribute`: sets standard profile fields, given as `userAttributeKey` +
    /// `userAttributeValue` and/or as parameters named after the fields (`email`, `first_name`, …).
    case setUserAttribute
}
