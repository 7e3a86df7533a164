import ContainerKit
import Foundation

/// The debug page's HTML: whole pages and the fragments a live stream sends (one renderer for both). Every value
/// goes through ``HTML``'s escaping; the pages load one same-origin script and one style sheet and hold no inline
/// script, style or event handler (the Content-Security-Policy forbids them).
enum DebugPages {
    /// What the page shows of a session besides its pushes.
    struct SessionView: Sendable {
        /// The session's data layer (merged model); `nil` when the session is not in memory on this instance.
        var dataLayer: ValueMap?
        /// The records its Braze tags hold until its user is known.
        var pending: [Value]
    }

    /// A whole page: `title`, then `body` inside the common frame.
    static func document(title: String, page: String, bodyAttributes: [(String, String)] = [], _ body: String) -> String
    {
        var html = HTML()
        html.raw("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        html.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>")
        html.text(title)
        html.raw("</title><link rel=\"stylesheet\" href=\"/debug/static/debug.css\">")
        html.raw("<script src=\"/debug/static/debug.js\" defer></script></head>\n<body")
        html.attribute("data-page", page)
        for (name, value) in bodyAttributes { html.attribute(name, value) }
        html.raw("><header><a class=\"home\" href=\"/debug\">TagService debug</a>")
        html.raw("<form class=\"picker\" method=\"get\" action=\"/debug/users\"><label>Follow user ")
        html.raw("<input name=\"user\" required autocomplete=\"off\" placeholder=\"user id\"></label>")
        html.raw("<button type=\"submit\">Follow</button></form></header>\n<main>")
        html.raw(body)
        html.raw("</main></body></html>\n")
        return html.string
    }

    // MARK: User page

    /// `GET /debug/users/<user id>`: the user's traced pushes (newest first), data layer and pending records.
    static func userPage(userID: String, since: Date, entries: [DebugPushEntry], session: SessionView, grace: Duration)
        -> String
    {
        var html = HTML()
        html.raw("<h1>User <span class=\"user-id\">")
        html.text(userID)
        html.raw("</span></h1><p class=\"following\">Following since ")
        html.text(timestamp(since))
        html.raw(". Pushes of this user are traced while this page is open and for ")
        html.text(minutes(grace))
        html.raw(" after it closes. <span id=\"live\" class=\"live\">connecting…</span></p>")
        html.raw("<div class=\"columns\"><section class=\"pushes-column\"><h2>Pushes, newest first</h2>")
        html.raw("<p id=\"empty\" class=\"empty\"")
        if !entries.isEmpty { html.raw(" hidden") }
        html.raw(">No push yet: use the app as this user, then watch here.</p><div id=\"pushes\">")
        for entry in entries { html.raw(push(entry)) }
        html.raw("</div></section><aside class=\"state-column\">")
        html.raw(state(session))
        html.raw("</aside></div>")
        return document(
            title: "User \(userID) · TagService debug",
            page: "user",
            bodyAttributes: [
                ("data-stream", "/debug/users/\(HTML.pathSegment(userID))/events"),
                ("data-after", String(entries.first?.sequence ?? 0)),
            ],
            html.string
        )
    }

    /// One push: a `<details>` whose summary says what fired, expandable into the trace.
    static func push(_ entry: DebugPushEntry) -> String {
        let trace = entry.trace
        let tags = trace.tags
        let fired = tags.filter { [.fired, .pending, .unsupported].contains($0.outcome) }.count
        let notFired = tags.filter { [.notFired, .paused, .alreadyFired].contains($0.outcome) }.count
        let blocked = tags.filter { [.blocked, .blockedByConsent].contains($0.outcome) }.count
        var html = HTML()
        html.raw("<details class=\"push\"")
        html.attribute("id", "push-\(entry.sequence)")
        html.attribute("data-sequence", String(entry.sequence))
        html.attribute("data-event", trace.event ?? "")
        html.attribute("data-outcome", trace.outcome.rawValue)
        html.raw("><summary><span class=\"sequence\">#\(entry.sequence)</span> <time>")
        html.text(timestamp(entry.time))
        html.raw("</time> <span class=\"event\">")
        html.text(trace.consent.map { "consent \($0.kind)" } ?? trace.event ?? "(no event)")
        html.raw("</span> ")
        if trace.outcome != .applied {
            html.element("span", class: "outcome outcome-\(trace.outcome.rawValue)", trace.outcome.rawValue)
        }
        html.raw("<span class=\"counts\"><span class=\"fired\">\(fired) fired</span> · ")
        html.raw("<span class=\"not-fired\">\(notFired) not fired</span>")
        if blocked > 0 { html.raw(" · <span class=\"blocked\">\(blocked) blocked</span>") }
        html.raw("</span>")
        if entry.viaHeader {
            html.raw(" <span class=\"via-header\" title=\"traced by the debug header\">header</span>")
        }
        html.raw("</summary><div class=\"trace\">")
        if let refusal = trace.refusal {
            html.element("p", class: "refusal", "Refused: \(refusal.code) \(refusal.message)")
        }
        if let eventID = trace.eventID {
            html.raw("<p class=\"event-id\">message_id <code>")
            html.text(eventID)
            html.raw("</code></p>")
        }
        html.raw("<h3>Message</h3><pre class=\"message\">")
        html.json(trace.message)
        html.raw("</pre>")
        if let consent = trace.consent { self.consent(consent, into: &html) }
        for evaluation in trace.evaluations { self.evaluation(evaluation, into: &html) }
        if !trace.changes.isEmpty {
            html.raw(
                "<h3>Data layer changes</h3><table class=\"changes\"><tr><th>key</th><th>before</th><th>after</th></tr>"
            )
            for change in trace.changes {
                html.raw("<tr><td><code>")
                html.text(change.key)
                html.raw("</code></td><td><pre>")
                html.json(change.before)
                html.raw("</pre></td><td><pre>")
                html.json(change.after)
                html.raw("</pre></td></tr>")
            }
            html.raw("</table>")
        }
        html.raw(records(entry))
        html.raw("</div></details>")
        return html.string
    }

    /// A push's records with their state, durability and delivery (`<div id="records-<sequence>">`, replaced whole
    /// by the live stream's `delivery` event when their delivery state changes).
    static func records(_ entry: DebugPushEntry) -> String {
        let trace = entry.trace
        var html = HTML()
        html.raw("<div class=\"records\"")
        html.attribute("id", "records-\(entry.sequence)")
        html.raw("><h3>Records (\(trace.records.count))</h3>")
        if trace.records.isEmpty { html.raw("<p class=\"none\">none</p>") }
        for record in trace.records {
            html.raw("<div class=\"record\"")
            html.attribute("data-state", record.state.rawValue)
            html.raw("><p>")
            html.element(
                "span",
                class: "record-tag",
                record.tagName ?? (record.fromPushHook ? "released by the push" : "tag")
            )
            html.raw(" ")
            html.element("span", class: "record-state", record.state.rawValue)
            html.raw(" ")
            html.element("span", class: "record-durability", record.durability.rawValue)
            if let error = record.durabilityError { html.raw(" "); html.element("code", error) }
            if let delivery = record.delivery {
                html.raw(" ")
                html.element("span", class: "record-delivery delivery-\(delivery.rawValue)", delivery.rawValue)
            }
            if let reason = record.deliveryReason {
                html.raw(" "); html.element("span", class: "delivery-reason", reason)
            }
            html.raw("</p><pre>")
            html.json(record.record)
            html.raw("</pre></div>")
        }
        html.raw("</div>")
        return html.string
    }

    /// What a consent command changed: per consent type it names, granted or denied before and after.
    static func consent(_ consent: PushTrace.Consent, into html: inout HTML) {
        html.raw("<h3>Consent ")
        html.text(consent.kind)
        if let regions = consent.regions {
            html.raw(" <span class=\"regions\">for ")
            html.text(regions.joined(separator: ", "))
            html.raw("</span>")
        }
        html.raw("</h3><table class=\"consent\"><tr><th>type</th><th>before</th><th>after</th></tr>")
        for type in consent.types {
            html.raw("<tr class=\"consent-type\"")
            html.attribute("data-type", type.type)
            html.attribute("data-changed", type.before == type.after ? "false" : "true")
            html.raw("><td><code>")
            html.text(type.type)
            html.raw("</code></td><td class=\"before\">")
            html.text(type.before ?? "not set")
            html.raw("</td><td class=\"after\">")
            html.text(type.after ?? "not set")
            if type.before == type.after { html.raw(" <span class=\"none\">(unchanged)</span>") }
            html.raw("</td></tr>")
        }
        html.raw("</table>")
    }

    /// One container's evaluation: its tags with their outcomes, then the variables.
    static func evaluation(_ evaluation: PushTrace.Evaluation, into html: inout HTML) {
        html.raw("<section class=\"evaluation\"")
        html.attribute("data-container", evaluation.containerID)
        html.raw("><h3>")
        html.text(evaluation.containerID)
        if !evaluation.containerVersion.isEmpty {
            html.raw(" <span class=\"version\">version ")
            html.text(evaluation.containerVersion)
            html.raw("</span>")
        }
        if evaluation.nested { html.raw(" <span class=\"nested\">pushed by a tag</span>") }
        html.raw("</h3><table class=\"tags\"><tr><th>tag</th><th>outcome</th><th>why</th></tr>")
        for tag in evaluation.tags {
            html.raw("<tr class=\"tag\"")
            html.attribute("data-tag", tag.name ?? "tag \(tag.index)")
            html.attribute("data-outcome", tag.outcome.rawValue)
            html.raw("><td class=\"tag-name\">")
            html.text(tag.name ?? "tag \(tag.index)")
            if let classPath = tag.classPath {
                html.raw("<br><code class=\"class-path\">")
                html.text(classPath)
                html.raw("</code>")
            }
            html.raw("</td><td class=\"tag-outcome\">")
            html.text(tag.outcome.rawValue.replacingOccurrences(of: "_", with: " "))
            if let status = tag.status, status.name != "ok" {
                html.raw(" <span class=\"status\">(")
                html.text(status.name)
                if let message = status.message {
                    html.raw(": ")
                    html.text(message)
                }
                html.raw(")</span>")
            }
            html.raw("</td><td class=\"why\">")
            for condition in tag.failedConditions ?? [] { self.condition(condition, into: &html) }
            for rule in tag.blockedBy ?? [] {
                html.raw("<p class=\"blocked-by\">blocked by trigger ")
                html.text(rule.name.map { "'\($0)'" } ?? "#\(rule.index)")
                html.raw("</p>")
            }
            if tag.failedConditions?.isEmpty ?? true, tag.blockedBy?.isEmpty ?? true, let reason = tag.reason {
                html.element("p", class: "reason", reason)
            }
            if let arguments = tag.arguments, case .object(let map) = arguments, !map.isEmpty {
                html.raw("<details class=\"arguments\"><summary>arguments</summary><pre>")
                html.json(arguments)
                html.raw("</pre></details>")
            }
            html.raw("</td></tr>")
        }
        html.raw("</table>")
        if !evaluation.variables.isEmpty {
            html.raw("<details class=\"variables\"><summary>Variables (\(evaluation.variables.count))</summary>")
            html.raw("<table><tr><th>variable</th><th>value</th></tr>")
            for variable in evaluation.variables {
                html.raw("<tr class=\"variable\"")
                html.attribute("data-variable", variable.name ?? variable.function)
                html.raw("><td><code>")
                html.text(variable.name.map { "{{\($0)}}" } ?? variable.function)
                html.raw("</code></td><td><pre>")
                html.json(variable.value)
                html.raw("</pre></td></tr>")
            }
            html.raw("</table></details>")
        }
        html.raw("</section>")
    }

    /// A failed condition: which trigger, the test in words, and both operands as evaluated.
    static func condition(_ condition: PushTrace.Condition, into html: inout HTML) {
        html.raw("<p class=\"condition\"")
        html.attribute("data-role", condition.role.rawValue)
        html.attribute("data-operator", condition.operator)
        html.raw(">trigger ")
        html.text(condition.rule.name.map { "'\($0)'" } ?? "#\(condition.rule.index)")
        html.raw(condition.role == .if ? ": " : ": exception held: ")
        html.raw("<code class=\"variable\">")
        html.text(condition.variable ?? "value")
        html.raw("</code> ")
        html.text(operatorWords(condition))
        html.raw(" <code class=\"right\">")
        html.json(condition.right)
        html.raw("</code> — value <code class=\"left\">")
        html.json(condition.left)
        html.raw("</code>")
        if let note = condition.note {
            html.raw(" ")
            html.element("span", class: "note", note)
        }
        html.raw("</p>")
    }

    static func operatorWords(_ condition: PushTrace.Condition) -> String {
        let words: String
        switch condition.operator {
        case "_eq": words = "equals"
        case "_cn": words = "contains"
        case "_sw": words = "starts with"
        case "_ew": words = "ends with"
        case "_re": words = "matches RegEx"
        case "_lt": words = "less than"
        case "_le": words = "less than or equal to"
        case "_gt": words = "greater than"
        case "_ge": words = "greater than or equal to"
        case "_lc": words = "is in list"
        default: words = condition.operator
        }
        var text = condition.negate ? "does not \(words)" : words
        if condition.ignoreCase { text += " (ignoring case)" }
        return text
    }

    /// The data layer and pending records (`<div id="state">`, replaced whole by the live stream).
    static func state(_ session: SessionView) -> String {
        var html = HTML()
        html.raw("<div id=\"state\"><h2>Data layer</h2>")
        if let model = session.dataLayer {
            html.raw("<pre class=\"data-layer\">")
            html.json(.object(model))
            html.raw("</pre>")
        } else {
            html.raw("<p class=\"none\">This user has no session in memory on this instance.</p>")
        }
        html.raw("<h2>Pending records (\(session.pending.count))</h2>")
        if session.pending.isEmpty {
            html.raw("<p class=\"none\">none: no Braze record waits for this user</p>")
        }
        for record in session.pending {
            html.raw("<pre class=\"pending-record\">")
            html.json(record)
            html.raw("</pre>")
        }
        html.raw("</div>")
        return html.string
    }

    // MARK: Overview

    /// What the overview shows.
    struct OverviewView: Sendable {
        var containers: [(id: String, version: String)]
        var followed: [(userID: String, since: Date, pushes: Int, openStreams: Int)]
        var tags: [(tag: DebugOverview.TagKey, counts: [DebugOverview.Counts])]
        var deliveries: [DebugOverview.DeliverySample]
        var openStreams: Int
        var settings: DebugSettings
    }

    /// `GET /debug`: the overview page.
    static func overviewPage(_ view: OverviewView) -> String {
        document(title: "TagService debug", page: "overview", "<div id=\"overview\">\(overview(view))</div>")
    }

    /// The overview's content (also `GET /debug/overview`, which the page fetches to refresh itself).
    static func overview(_ view: OverviewView) -> String {
        var html = HTML()
        html.raw("<h1>Overview</h1><section class=\"containers\"><h2>Live containers</h2>")
        if view.containers.isEmpty { html.raw("<p class=\"none\">no container is live</p>") }
        html.raw("<ul>")
        for container in view.containers {
            html.raw("<li class=\"container\"")
            html.attribute("data-container", container.id)
            html.raw("><code>")
            html.text(container.id)
            html.raw("</code> version ")
            html.text(container.version.isEmpty ? "(none)" : container.version)
            html.raw("</li>")
        }
        html.raw("</ul></section><section class=\"followed\"><h2>Followed users (\(view.followed.count) of ")
        html.raw(
            "\(view.settings.maximumFollowedUsers); \(view.openStreams) of \(view.settings.maximumStreams) live pages)</h2>"
        )
        if view.followed.isEmpty {
            html.raw("<p class=\"none\">Nobody is followed: type a user id above, or send a request with the ")
            html.raw("<code>X-TagService-Debug</code> header.</p>")
        }
        html.raw("<ul>")
        for user in view.followed {
            html.raw("<li><a")
            html.attribute("href", "/debug/users/\(HTML.pathSegment(user.userID))")
            html.raw(">")
            html.text(user.userID)
            html.raw("</a> — \(user.pushes) pushes since ")
            html.text(timestamp(user.since))
            if user.openStreams > 0 { html.raw(" · page open") }
            html.raw("</li>")
        }
        html.raw("</ul></section><section class=\"tag-charts\"><h2>Tags in every push, last ")
        html.text(minutes(DebugOverview.bucket * DebugOverview.buckets))
        html.raw(
            "</h2><p class=\"legend\"><span class=\"fired\">■ fired</span> <span class=\"not-fired\">■ not fired</span> "
        )
        html.raw("<span class=\"blocked\">■ blocked</span>; one bar per ")
        html.text("\(DebugOverview.bucket.components.seconds) s")
        html.raw(".</p>")
        if view.tags.isEmpty { html.raw("<p class=\"none\">no live container has a tag</p>") }
        html.raw("<table class=\"charts\">")
        for (tag, counts) in view.tags {
            let total = counts.reduce(DebugOverview.Counts()) {
                .init(fired: $0.fired + $1.fired, notFired: $0.notFired + $1.notFired, blocked: $0.blocked + $1.blocked)
            }
            html.raw("<tr class=\"tag-chart\"")
            html.attribute("data-tag", tag.name)
            html.raw("><td><code>")
            html.text(tag.containerID)
            html.raw("</code> ")
            html.text(tag.name)
            html.raw("</td><td>")
            html.raw(DebugCharts.bars(counts, label: "\(tag.name): fired, not fired and blocked per bucket"))
            html.raw("</td><td class=\"totals\"><span class=\"fired\">\(total.fired)</span> / ")
            html.raw(
                "<span class=\"not-fired\">\(total.notFired)</span> / <span class=\"blocked\">\(total.blocked)</span></td></tr>"
            )
        }
        html.raw("</table></section><section class=\"delivery\"><h2>Delivery</h2>")
        let backlog = view.deliveries.map { Double($0.backlog) }
        let latency = view.deliveries.map { $0.latency.map { $0.inSeconds } }
        html.raw("<p>Backlog (records durable, not yet delivered): ")
        html.text(view.deliveries.last.map { String($0.backlog) } ?? "not sampled yet")
        html.raw("</p>")
        html.raw(DebugCharts.line(backlog, label: "delivery backlog, records"))
        html.raw("<p>Latency (estimated wait before delivery: backlog ÷ delivery rate): ")
        html.text(view.deliveries.last?.latency.map { String(format: "%.2f s", $0.inSeconds) } ?? "—")
        html.raw("</p>")
        html.raw(DebugCharts.line(latency, label: "delivery latency, seconds"))
        html.raw("</section>")
        return html.string
    }

    /// A page that says why something cannot be shown.
    static func message(_ title: String, _ text: String) -> String {
        var html = HTML()
        html.element("h1", title)
        html.element("p", class: "message", text)
        return document(title: "\(title) · TagService debug", page: "message", html.string)
    }

    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let seconds = milliseconds / 1000
        let day = seconds % 86_400
        return String(
            format: "%02lld:%02lld:%02lld.%03lld UTC",
            day / 3600,
            day % 3600 / 60,
            day % 60,
            milliseconds % 1000
        )
    }

    static func minutes(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }
}
