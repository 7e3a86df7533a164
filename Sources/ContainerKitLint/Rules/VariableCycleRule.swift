import ContainerKit

/// Variables (macros) that reference each other in a cycle, which no runtime can evaluate.
struct VariableCycleRule: LintRule {
    static let description = RuleDescription(
        id: "variable_cycle",
        name: "Variable Cycle",
        description: "Variables reference each other in a cycle, so none of them can be evaluated.",
        severity: .error,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [
              {"function": "__c", "instance_name": "A", "vtp_value": ["macro", 1]},
              {"function": "__c", "instance_name": "B", "vtp_value": ["template", "x", ["macro", 0]]}]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"variable": [
              {"name": "Self", "type": "c",
                "parameter": [{"type": "TEMPLATE", "key": "value", "value": "{{Self}}!"}]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [
              {"function": "__c", "instance_name": "A", "vtp_value": ["macro", 1]},
              {"function": "__c", "instance_name": "B", "vtp_value": "b"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program, !program.macros.isEmpty else { return [] }
        let count = program.macros.count
        var edges: [[Int]] = Array(repeating: [], count: count)
        for i in 0..<count {
            program.forEachReference(ofMacro: i) { target in
                if target >= 0 && target < count { edges[i].append(target) }
            }
        }
        var findings: [LintFinding] = []
        for component in Self.stronglyConnectedComponents(edges) {
            let members = component.sorted()
            let first = members[0]
            if members.count == 1 && !edges[first].contains(first) { continue }
            let message: String
            if members.count == 1 {
                message = "variable \(program.macroLabel(first)) refers to itself"
            } else {
                let labels = members.map(program.macroLabel)
                message =
                    "variables \(labels.dropLast().joined(separator: ", ")) and \(labels.last!) "
                    + "refer to each other in a cycle"
            }
            findings.append(input.finding(Self.description, message, at: program.macros[first].origin.pointer))
        }
        return findings
    }

    /// Tarjan's algorithm without recursion (a long chain of variables must not exhaust the stack).
    static func stronglyConnectedComponents(_ edges: [[Int]]) -> [[Int]] {
        let count = edges.count
        var index = Array(repeating: -1, count: count)
        var lowLink = Array(repeating: 0, count: count)
        var onStack = Array(repeating: false, count: count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var nextIndex = 0
        for root in 0..<count where index[root] < 0 {
            var work: [(node: Int, edge: Int)] = [(root, 0)]
            index[root] = nextIndex
            lowLink[root] = nextIndex
            nextIndex += 1
            stack.append(root)
            onStack[root] = true
            while let (node, edge) = work.last {
                if edge < edges[node].count {
                    work[work.count - 1].edge += 1
                    let target = edges[node][edge]
                    if index[target] < 0 {
                        index[target] = nextIndex
                        lowLink[target] = nextIndex
                        nextIndex += 1
                        stack.append(target)
                        onStack[target] = true
                        work.append((target, 0))
                    } else if onStack[target] {
                        lowLink[node] = min(lowLink[node], index[target])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { lowLink[parent] = min(lowLink[parent], lowLink[node]) }
                if lowLink[node] == index[node] {
                    var component: [Int] = []
                    while let member = stack.popLast() {
                        onStack[member] = false
                        component.append(member)
                        if member == node { break }
                    }
                    components.append(component)
                }
            }
        }
        return components
    }
}
