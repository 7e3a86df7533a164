/// A function-call tag's call, precomputed at load: the constant class path (or legacy function name) and
/// the argument map as constant keys with one value slot each, so firing the tag evaluates no expression
/// tree for the keys and reads each slot without walking `Expr` boxes.
///
/// Built only for tags whose class path is a string literal and whose argument map has constant, distinct
/// string keys (what every compiler emits through `Expr.distinctMap`); any other tag keeps the general path.
final class CallPlan: Sendable {
    /// A value of the argument map: a constant, a macro read by index, or any other expression.
    enum Slot: Sendable {
        case literal(Value)
        case macro(Int)
        case expression(Expr)
    }

    /// The class path or legacy function name the handler is registered under.
    var name: String { origin.name }
    /// The argument keys, in the container's order (distinct).
    let keys: [String]
    /// One slot per key.
    let slots: [Slot]
    /// What each ``FunctionCall`` of the tag is to: its class path, container, tag ID and name.
    let origin: FunctionCall.Origin

    /// The plan of every tag of `program` (`nil` where a tag does not qualify), in container `containerID`.
    static func plans(for program: Program, containerID: String) -> [CallPlan?] {
        program.tags.map { tag in
            let path: String
            let arguments: Expr
            switch tag.kind {
            case .functionCall(.literal(.string(let literal)), let expr): (path, arguments) = (literal, expr)
            case .legacyFunctionCall(let name, let expr): (path, arguments) = (name, expr)
            default: return nil
            }
            let origin = FunctionCall.Origin(
                name: path,
                containerID: containerID,
                tagID: tag.tagID,
                displayName: tag.name
            )
            return CallPlan(origin: origin, arguments: arguments)
        }
    }

    private init?(origin: FunctionCall.Origin, arguments: Expr) {
        guard case .map(let entries) = arguments else { return nil }
        var keys: [String] = []
        var slots: [Slot] = []
        keys.reserveCapacity(entries.count)
        slots.reserveCapacity(entries.count)
        for entry in entries {
            guard case .literal(.string(let key)) = entry.key, !keys.contains(where: { $0.hasSameBytes(as: key) })
            else { return nil }
            keys.append(key)
            switch entry.value {
            case .literal(let value): slots.append(.literal(value))
            case .macro(let index): slots.append(.macro(index))
            default: slots.append(.expression(entry.value))
            }
        }
        self.keys = keys
        self.slots = slots
        self.origin = origin
    }
}
