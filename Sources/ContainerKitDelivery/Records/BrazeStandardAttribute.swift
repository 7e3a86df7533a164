/// One of Braze's standard user-profile fields that `setUserAttribute` may set.
///
/// The raw value is Braze's REST key. Tag parameters may name a field by that key (`first_name`) or in
/// camel case (`firstName`); `dateOfBirth` is accepted for `dob`.
public enum BrazeStandardAttribute: String, Sendable, Hashable, CaseIterable {
    /// Email address; must look like one (`name@domain.tld`, at most 255 characters).
    case email
    /// First name.
    case firstName = "first_name"
    /// Last name.
    case lastName = "last_name"
    /// Phone number: digits, spaces and `+ - ( ) .`, with at least one digit.
    case phone
    /// `M`, `F`, `O` (other), `N` (not applicable), `P` (prefer not to say); the words `male`,
    /// `female`, `other`, `not_applicable` and `prefer_not_to_say` are accepted and shortened.
    case gender
    /// Date of birth, `YYYY-MM-DD`.
    case dob
    /// ISO-3166-1 alpha-2 country code (sent uppercase).
    case country
    /// ISO-639-1 language code (sent lowercase).
    case language
    /// Home city.
    case homeCity = "home_city"
    /// Email subscription state: `opted_in`, `subscribed` or `unsubscribed`.
    case emailSubscribe = "email_subscribe"
    /// Push subscription state: `opted_in`, `subscribed` or `unsubscribed`.
    case pushSubscribe = "push_subscribe"

    /// Finds the field a tag parameter names: Braze's key, its camel-case form, or `dateOfBirth`.
    public init?(parameterName name: String) {
        if let field = BrazeStandardAttribute(rawValue: name) {
            self = field
            return
        }
        switch name {
        case "firstName": self = .firstName
        case "lastName": self = .lastName
        case "homeCity": self = .homeCity
        case "emailSubscribe": self = .emailSubscribe
        case "pushSubscribe": self = .pushSubscribe
        case "dateOfBirth": self = .dob
        default: return nil
        }
    }
}
