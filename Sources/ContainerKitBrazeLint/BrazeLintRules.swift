public import ContainerKitLint

/// The Braze lint rules, for a linter's catalog: `Linter(configuration:catalog:)` with
/// `Linter.builtInRules + BrazeLintRules.all` (what `containerkit lint` runs). They check Braze provider tags
/// (Function Call tags whose class path is one of the configuration's `braze_class_paths`) with the runtime's
/// own ``BrazeRules``, so lint and the runtime cannot disagree.
public enum BrazeLintRules {
    /// The Braze rules, in catalog order.
    public static let all: [any LintRule.Type] = [BrazeActionRule.self, BrazePropertyRule.self]
}

extension Linter {
    /// Every rule `containerkit lint` knows: the built-in rules, then the Braze rules.
    public static let allRules: [any LintRule.Type] = builtInRules + BrazeLintRules.all
}
