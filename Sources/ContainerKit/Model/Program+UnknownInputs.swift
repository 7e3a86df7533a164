/// What ContainerKit cannot evaluate as a page would: the variables it does not compute (browser-only built-ins,
/// custom JavaScript, cookies, custom templates, …: ``MacroKind/unsupported``, undefined here) and the conditions
/// it does not test (a CSS selector, a trigger type it does not run). A decision that reads one is made with it
/// undefined (or false), which a browser may decide otherwise.
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

    /// Per macro: whether its value depends on a variable ContainerKit does not compute, itself or through the
    /// macros it reads (a cycle reads as known). Walked with a stack of its own: a chain of thousands of macros
    /// (hostile or generated) must not exhaust the thread's.
    package func unknownMacros() -> [Bool] {
        var unknown = [Bool](repeating: false, count: macros.count)
        // 0: not visited, 1: on the stack, 2: done.
        var marks = [UInt8](repeating: 0, count: macros.count)
        var references = [[Int]](repeating: [], count: macros.count)
        for start in macros.indices where marks[start] == 0 {
            // Each frame: a macro and how many of its references were looked at.
            var stack: [(macro: Int, next: Int)] = [(start, 0)]
            marks[start] = 1
            forEachReference(ofMacro: start) { references[start].append($0) }
            while let top = stack.last {
                let macro = top.macro
                if case .unsupported = macros[macro].kind { unknown[macro] = true }
                if top.next < references[macro].count, !unknown[macro] {
                    let reference = references[macro][top.next]
                    stack[stack.count - 1].next += 1
                    guard macros.indices.contains(reference) else { continue }
                    switch marks[reference] {
                    case 0:
                        marks[reference] = 1
                        forEachReference(ofMacro: reference) { references[reference].append($0) }
                        stack.append((reference, 0))
                    case 2:
                        if unknown[reference] { unknown[macro] = true }
                    default:
                        break  // on the stack: a cycle
                    }
                    continue
                }
                marks[macro] = 2
                references[macro] = []
                stack.removeLast()
                if unknown[macro], let parent = stack.last { unknown[parent.macro] = true }
            }
        }
        return unknown
    }

    /// What ContainerKit cannot evaluate (see the extension's comment), each once: `{{Name}}` for a variable, the
    /// operator for a condition it does not test. `byPredicate`: what each predicate reads; `byTag`: what the
    /// conditions of the triggers that fire or block each tag read, in rule order. Empty for most.
    package func unknownInputs() -> (byPredicate: [[String]], byTag: [[String]]) {
        let unknown = unknownMacros()
        let byPredicate = predicates.map { predicate in
            var found: [String] = []
            if predicate.op == .unsupported {
                found.append(
                    predicate.function == "_never" ? "a trigger type ContainerKit does not run" : predicate.function
                )
            }
            for expr in [predicate.arg0, predicate.arg1] {
                expr.forEachMacro { m in
                    guard unknown.indices.contains(m), unknown[m] else { return }
                    let label = "{{\(macros[m].name ?? macros[m].function)}}"
                    if !found.contains(label) { found.append(label) }
                }
            }
            return found
        }
        var byTag = [[String]](repeating: [], count: tags.count)
        for rule in rules where !rule.add.isEmpty || !rule.block.isEmpty {
            var found: [String] = []
            for p in rule.ifs + rule.unless where byPredicate.indices.contains(p) {
                for label in byPredicate[p] where !found.contains(label) { found.append(label) }
            }
            guard !found.isEmpty else { continue }
            for t in rule.add + rule.block where byTag.indices.contains(t) {
                for label in found where !byTag[t].contains(label) { byTag[t].append(label) }
            }
        }
        return (byPredicate, byTag)
    }
}
