extension DataLayer {
    /// The push key that asks for every other key of the push to replace, not merge into, its value.
    static let clearKey = "_clear"

    /// Applies a push to the model the way GTM's web runtime does (`gtm.js`, and google/data-layer-helper):
    /// **key by key, in the push's order** — each key is expanded on its dots and deep-merged into the model
    /// before the next key is looked at — so `{"cart": "", "cart.fresh": 2}` first replaces `cart` (its
    /// old members are gone) and then sets `cart.fresh`. A push whose `_clear` is truthy (JavaScript's
    /// truthiness) removes each key's current value before setting it, so maps and arrays are replaced
    /// instead of merged; `_clear` itself is never stored.
    ///
    /// Undefined values are skipped (JSON cannot carry them); with `_clear` they remove the key.
    ///
    /// `dotted` is whether any key of the message has a dot (the caller may know already); a push without
    /// dotted keys and without `_clear` sets each scalar value with one look-up of its key.
    static func apply(_ message: ValueMap, to model: inout ValueMap, dotted: Bool? = nil) {
        let clears = message[clearKey]?.isTruthy ?? false
        let dotted = dotted ?? message.keys.contains(where: hasDot)
        // Where the next key is likely to be in the model: after the last one set (a source pushes its keys in
        // the same order each time, and the model keeps the order they were first set in).
        var hint = 0
        for (key, value) in message {
            if !dotted, !clears {
                switch value {
                case .undefined: continue
                case .object, .array: break  // merged below
                default:
                    if key.hasSameBytes(as: clearKey) { continue }
                    model.setValue(value, forKey: key, hint: &hint)
                    hint += 1
                    continue
                }
            }
            if key.hasSameBytes(as: clearKey) || (value.isUndefined && !clears) { continue }
            if dotted, hasDot(key) {
                var parts = key.split(separator: ".", omittingEmptySubsequences: false)
                if parts.count > DataLayer.maximumKeyDepth {
                    // A key with thousands of dots must not build a value too deep to merge; the tail stays
                    // one literal key.
                    let tail = parts[(DataLayer.maximumKeyDepth - 1)...].joined(separator: ".")
                    parts = Array(parts.prefix(DataLayer.maximumKeyDepth - 1)) + [Substring(tail)]
                }
                set(parts[...], value, clearing: clears, in: &model)
            } else {
                set(key, value, clearing: clears, in: &model)
            }
        }
    }

    /// Merges `value` into `model[key]`, after removing what was there when `clearing`.
    private static func set(_ key: String, _ value: Value, clearing: Bool, in model: inout ValueMap) {
        if value.isUndefined {
            model[key] = nil
            return
        }
        model.modify(key, default: .undefined) {
            if clearing { $0 = .undefined }
            merge(value, into: &$0)
        }
    }

    /// Merges `value` at the dotted path `parts` of `model`: what `{a: {b: value}}` merged into the model
    /// does (a member on the way that is not a map becomes an empty map), without building that object.
    private static func set(
        _ parts: ArraySlice<Substring>,
        _ value: Value,
        clearing: Bool,
        in model: inout ValueMap
    ) {
        let head = String(parts[parts.startIndex])
        let rest = parts.dropFirst()
        guard !rest.isEmpty else {
            set(head, value, clearing: clearing, in: &model)
            return
        }
        model.modify(head, default: .undefined) { slot in
            var map: ValueMap
            if case .object(let current) = slot { map = current } else { map = ValueMap() }
            slot = .undefined  // drop the second reference so `map` mutates in place
            set(rest, value, clearing: clearing, in: &map)
            slot = .object(map)
        }
    }
}
