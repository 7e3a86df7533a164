/// What ContainerKit cannot evaluate as a page would: the variables it does not compute (browser-only built-ins,
/// custom JavaScript, custom templates, …: ``MacroKind/unsupported``, undefined here), the page's URL, referrer and
/// cookies when the session does not know them, and the conditions it does not test (a CSS selector, a trigger type
/// it does not run). A decision that reads one is made with it undefined (or false), which a browser may decide
/// otherwise.
extension Program {
    /// Calls `body` with every macro index macro `index` reads (its parameters and value formats).
    package func forEachReference(ofMacro index: Int, _ body: (Int) -> Void) {
        let macro = macros[index]
        for parameter in macro.parameters { parameter.value.forEachMacro(body) }
        for expr in [
            macro.format.convertNullTo, macro.format.convertUndefinedTo, macro.format.convertTrueTo,
            macro.format.convertFalseTo,
        ] {
            expr?.forEachMacro(body)
        }
    }

    /// Per macro: what its value needs that ContainerKit may not have, itself or through the macros it reads (a
    /// cycle reads as known): ``UnknownInput/Needs``. Walked with a stack of its own: a chain of thousands of macros
    /// (hostile or generated) must not exhaust the thread's.
    package func unknownMacros() -> [UnknownInput.Needs] {
        var needs = [UnknownInput.Needs](repeating: [], count: macros.count)
        // 0: not visited, 1: on the stack, 2: done.
        var marks = [UInt8](repeating: 0, count: macros.count)
        var references = [[Int]](repeating: [], count: macros.count)
        for start in macros.indices where marks[start] == 0 {
            // Each frame: a macro and how many of its references were looked at.
            var stack: [(macro: Int, next: Int)] = [(start, 0)]
            marks[start] = 1
            forEachReference(ofMacro: start) { references[start].append($0) }
            needs[start] = ownNeeds(start)
            while let top = stack.last {
                let macro = top.macro
                if top.next < references[macro].count, !needs[macro].contains(.evaluation) {
                    let reference = references[macro][top.next]
                    stack[stack.count - 1].next += 1
                    guard macros.indices.contains(reference) else { continue }
                    switch marks[reference] {
                    case 0:
                        marks[reference] = 1
                        forEachReference(ofMacro: reference) { references[reference].append($0) }
                        needs[reference] = ownNeeds(reference)
                        stack.append((reference, 0))
                    case 2:
                        needs[macro].formUnion(needs[reference])
                    default:
                        break  // on the stack: a cycle
                    }
                    continue
                }
                marks[macro] = 2
                references[macro] = []
                stack.removeLast()
                if let parent = stack.last { needs[parent.macro].formUnion(needs[macro]) }
            }
        }
        return needs
    }

    /// What macro `index` needs by itself: a page URL (Page URL and its parts without a custom source), a referrer,
    /// or an evaluation ContainerKit does not do.
    private func ownNeeds(_ index: Int) -> UnknownInput.Needs {
        switch macros[index].kind {
        case .unsupported: return .evaluation
        case .url(let variable): return variable.customSource == nil ? .pageURL : []
        case .referrer: return .referrer
        case .cookie: return .cookies
        default: return []
        }
    }

    /// What ContainerKit may not evaluate as a page would (see the extension's comment), each once: `{{Name}}` for a
    /// variable, the operator for a condition it does not test, with what would make it known. `byPredicate`: what
    /// each predicate reads; `byTag`: what the conditions of the triggers that fire or block each tag read, in rule
    /// order. Empty for most.
    package func unknownInputs() -> (byPredicate: [[UnknownInput]], byTag: [[UnknownInput]]) {
        let needs = unknownMacros()
        let byPredicate = predicates.map { predicate in
            var found: [UnknownInput] = []
            if predicate.op == .unsupported {
                let label =
                    predicate.function == "_never" ? "a trigger type ContainerKit does not run" : predicate.function
                found.append(UnknownInput(label: label, needs: .evaluation))
            }
            for expr in [predicate.arg0, predicate.arg1] {
                expr.forEachMacro { m in
                    guard needs.indices.contains(m), !needs[m].isEmpty else { return }
                    let label = "{{\(macros[m].name ?? macros[m].function)}}"
                    if !found.contains(where: { $0.label == label }) {
                        found.append(UnknownInput(label: label, needs: needs[m]))
                    }
                }
            }
            return found
        }
        var byTag = [[UnknownInput]](repeating: [], count: tags.count)
        for rule in rules where !rule.add.isEmpty || !rule.block.isEmpty {
            var found: [UnknownInput] = []
            for p in rule.ifs + rule.unless where byPredicate.indices.contains(p) {
                for input in byPredicate[p] where !found.contains(where: { $0.label == input.label }) {
                    found.append(input)
                }
            }
            guard !found.isEmpty else { continue }
            for t in rule.add + rule.block where byTag.indices.contains(t) {
                for input in found where !byTag[t].contains(where: { $0.label == input.label }) {
                    byTag[t].append(input)
                }
            }
        }
        return (byPredicate, byTag)
    }
}

/// An input of a decision ContainerKit may not evaluate as a page would, and what would make it known.
package struct UnknownInput: Sendable, Equatable {
    /// What the session would need for a value to be known.
    package struct Needs: OptionSet, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The page's URL (``ClientContext/pageURL`` or a pushed `gtm.url`).
        package static let pageURL = Needs(rawValue: 1 << 0)
        /// The referrer (``ClientContext/referrer`` or a pushed `gtm.referrer`).
        package static let referrer = Needs(rawValue: 1 << 1)
        /// The page's cookies (``ClientContext/cookies`` or a pushed `gtm.cookie`).
        package static let cookies = Needs(rawValue: 1 << 2)
        /// An evaluation ContainerKit does not do (custom JavaScript, a CSS selector): never known.
        package static let evaluation = Needs(rawValue: 1 << 7)
    }

    /// `{{Name}}` for a variable, the operator for a condition.
    package var label: String
    package var needs: Needs

    /// The labels of `inputs` that what the session has (`known`) does not make known.
    package static func labels(_ inputs: [UnknownInput], known: Needs) -> [String] {
        inputs.compactMap { $0.needs.isSubset(of: known) ? nil : $0.label }
    }
}
