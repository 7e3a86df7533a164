package import ContainerKit
import ContainerKitDelivery
import Foundation

extension BrazeRules {
    /// Every Braze rule that a call of `action` with `arguments` breaks — exactly what
    /// ``BrazeTagProvider/perform(_:)`` would drop the call for, because it is the same code: the provider's
    /// record builder runs with throwaway records (no IDs drawn, no sink, no data layer, no user).
    ///
    /// Lint (`ContainerKitLint`'s `braze_action` and `braze_property` rules) checks a tag's constant
    /// arguments with this, so lint and the runtime share one table of actions, currencies and limits.
    package static func violations(of action: BrazeActionType, arguments: ValueMap) -> [BrazeRuleViolation] {
        var rules = BrazeRules()
        _ = BrazeTagProvider.makeRecords(action, arguments, user: nil, &rules) { user, payload in
            AnalyticsRecord(id: "", time: Self.checkTime, user: user, payload: payload)
        }
        return rules.violations
    }

    /// The time of the throwaway records (never read).
    private static let checkTime = Date(timeIntervalSince1970: 0)
}
