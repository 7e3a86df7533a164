import ContainerKit
import ContainerKitBraze
import ContainerKitLint

/// The Function Call tags of a container whose class path is a configured Braze provider, with their
/// arguments and where each argument's value is in the file. Shared by the Braze rules.
struct BrazeTagArguments {
    struct Argument {
        var key: String
        var value: Expr
        var pointer: String
    }

    let label: String
    let pointer: String
    /// The arguments with constant keys, in container order; values that are constant on every event (see
    /// ``Program/constantValue(of:)``) are folded to literals.
    let arguments: [Argument]

    /// The argument named `key`.
    func argument(_ key: String) -> Argument? { arguments.first { $0.key == key } }

    /// The constant `actionType` as the runtime reads it: `nil` when the tag has none or it is set by a
    /// variable; `.failure` with its text when it is a constant the runtime does not know.
    var action: Result<BrazeActionType, UnknownAction>? {
        guard let argument = argument("actionType"), case .literal(let value) = argument.value else { return nil }
        guard case .string(let name) = value, let action = BrazeActionType(rawValue: name) else {
            return .failure(UnknownAction(text: value.jsString))
        }
        return .success(action)
    }

    /// A constant `actionType` that names no ``BrazeActionType``.
    struct UnknownAction: Error {
        var text: String
    }

    /// A rule the runtime would drop this tag's call for, with where to point.
    struct Violation {
        var violation: BrazeRuleViolation
        var pointer: String
    }

    /// The Braze rules that this tag's constant arguments break, checked by the runtime's own checker
    /// (``BrazeRules/violations(of:arguments:)`` in `ContainerKitBraze`), so lint and the runtime cannot
    /// disagree. Arguments set by variables are unknown until run time: the call is checked without them and
    /// what it says about them (missing, or, for `setUserAttribute`, no field at all) is left out.
    func violations(of action: BrazeActionType) -> [Violation] {
        var constants = ValueMap(minimumCapacity: arguments.count)
        var unknown: Set<String> = []
        for argument in arguments {
            if case .literal(let value) = argument.value {
                constants[argument.key] = value
            } else {
                unknown.insert(argument.key)
            }
        }
        return BrazeRules.violations(of: action, arguments: constants).compactMap { violation in
            if unknown.contains(violation.key) { return nil }
            if violation.rule == .missingParameter && action == .setUserAttribute && !unknown.isEmpty { return nil }
            // A value's violation is keyed by the attribute it sets; point at the value then.
            let at =
                argument(violation.key) ?? argument("customAttributeValue") ?? argument("userAttributeValue")
            return Violation(violation: violation, pointer: at?.pointer ?? pointer)
        }
    }

    /// Every Braze provider tag of the compiled container whose arguments are a table (not a macro).
    static func all(in input: LintInput) -> [BrazeTagArguments] {
        guard let program = input.program else { return [] }
        let classPaths = Set(input.configuration.brazeClassPaths)
        let rawTags = input.source.list(input.source.kind == .export ? "tag" : "tags")
        var out: [BrazeTagArguments] = []
        for (i, tag) in program.tags.enumerated() {
            guard case .functionCall(let classPath, let table) = tag.kind, let path = classPath.literalText,
                classPaths.contains(path)
            else { continue }
            var pairs: [(String, Expr)] = []
            switch table {
            case .map(let entries):
                for entry in entries { if let key = entry.key.literalText { pairs.append((key, entry.value)) } }
            case .literal(.object(let map)):
                for (key, value) in map { pairs.append((key, .literal(value))) }
            default:
                continue
            }
            let raw = i < rawTags.count ? rawTags[i] : nil
            let arguments = pairs.map { key, value in
                Argument(
                    key: key,
                    // Constant variables, lookup tables with constant inputs and constant templates are
                    // checked as the literals they are.
                    value: program.constantValue(of: value).map(Expr.literal) ?? value,
                    pointer: raw.flatMap { argumentPointer(key, in: $0) } ?? tag.origin.pointer
                )
            }
            out.append(BrazeTagArguments(label: program.tagLabel(i), pointer: tag.origin.pointer, arguments: arguments))
        }
        return out
    }

    /// The pointer of the value of argument `key` in a raw tag: a compiled `vtp_functionArgument` table or
    /// an export's `functionArgument` parameter.
    private static func argumentPointer(_ key: String, in tag: RawContainer.Entry) -> String? {
        guard let map = tag.map else { return nil }
        if case .array(let rows)? = map["vtp_functionArgument"] {
            for (r, row) in rows.enumerated() {
                guard case .array(let items) = row, items.first == .string("map") else { continue }
                var k = 1
                var matches = false
                var valueIndex: Int?
                while k + 1 < items.count {
                    if items[k] == .string("key"), items[k + 1] == .string(key) { matches = true }
                    if items[k] == .string("value") { valueIndex = k + 1 }
                    k += 2
                }
                if matches {
                    let row = JSONPointer.appending(tag.pointer + "/vtp_functionArgument", r)
                    return valueIndex.map { JSONPointer.appending(row, $0) } ?? row
                }
            }
        }
        guard case .array(let parameters)? = map["parameter"] else { return nil }
        for (p, parameter) in parameters.enumerated() {
            guard let param = parameter.objectValue, param["key"] == .string("functionArgument"),
                case .array(let rows)? = param["list"]
            else { continue }
            for (r, row) in rows.enumerated() {
                guard case .array(let cells)? = row.objectValue?["map"] else { continue }
                guard
                    cells.contains(where: {
                        $0.objectValue?["key"] == .string("key") && $0.objectValue?["value"] == .string(key)
                    })
                else { continue }
                let base = tag.pointer + "/parameter/\(p)/list/\(r)/map"
                if let v = cells.firstIndex(where: { $0.objectValue?["key"] == .string("value") }) {
                    return "\(base)/\(v)/value"
                }
                return base
            }
        }
        return nil
    }
}
