/// The shape of every error code in the package (``ContainerError/Code``, ``ContainerFetchError/Code``,
/// `BrazeRuleViolation.Rule`, …): a stable string that is its own description, extensible by clients with
/// `init(rawValue:)`. A conforming type declares its `rawValue` and `init(rawValue:)`; the conformances
/// (`RawRepresentable`, `Sendable`, `Hashable`, `CustomStringConvertible`) and the description come from here.
package protocol ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible where RawValue == String {}

extension ErrorCode {
    /// The code as text.
    public var description: String { rawValue }
}
