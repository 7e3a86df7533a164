/// The debug page's one script and one style sheet, served by the service from its own origin
/// (`/debug/static/…`): the Content-Security-Policy allows scripts and styles from there only.
enum DebugAssets {
    /// Follows the user's live stream (server-sent events): each `push` event's HTML (rendered and escaped by the
    /// service) goes on top of the list, each `delivery` event replaces a push's records (their delivery state
    /// changed), each `state` event replaces the data layer and pending records. The
    /// overview reloads its content every 5 seconds. No value is ever put into the page by the script: only the
    /// service's HTML, parsed into an inert template.
    static let script = #"""
        'use strict';
        (function () {
          const body = document.body;
          function fragment(html) {
            const template = document.createElement('template');
            template.innerHTML = html;
            return template.content.firstElementChild;
          }
          if (body.dataset.page === 'overview') {
            const overview = document.getElementById('overview');
            setInterval(function () {
              fetch('/debug/overview', { credentials: 'same-origin' })
                .then(function (answer) { return answer.ok ? answer.text() : null; })
                .then(function (html) { if (html !== null) { overview.innerHTML = html; } })
                .catch(function () {});
            }, 5000);
            return;
          }
          if (body.dataset.page !== 'user') { return; }
          const list = document.getElementById('pushes');
          const empty = document.getElementById('empty');
          const live = document.getElementById('live');
          const limit = 200;
          const source = new EventSource(body.dataset.stream + '?after=' + encodeURIComponent(body.dataset.after));
          source.addEventListener('open', function () {
            body.dataset.live = 'open';
            live.textContent = 'live';
            live.className = 'live open';
          });
          source.addEventListener('error', function () {
            body.dataset.live = 'reconnecting';
            live.textContent = 'reconnecting…';
            live.className = 'live closed';
          });
          source.addEventListener('push', function (event) {
            const element = fragment(event.data);
            if (!element || document.getElementById(element.id)) { return; }
            list.prepend(element);
            while (list.children.length > limit) { list.lastElementChild.remove(); }
            empty.hidden = true;
            body.dataset.after = element.dataset.sequence;
            body.dataset.pushes = String(list.children.length);
          });
          source.addEventListener('delivery', function (event) {
            const element = fragment(event.data);
            const records = element && element.id ? document.getElementById(element.id) : null;
            if (records) { records.replaceWith(element); }
          });
          source.addEventListener('state', function (event) {
            const element = fragment(event.data);
            const state = document.getElementById('state');
            if (element && state) { state.replaceWith(element); }
          });
          source.addEventListener('refused', function (event) {
            source.close();
            body.dataset.live = 'refused';
            live.textContent = event.data;
            live.className = 'live closed';
          });
        })();
        """#

    /// The style sheet.
    static let style = #"""
        :root { font-family: system-ui, sans-serif; font-size: 14px; color: #212121; background: #fff; }
        body { margin: 0; }
        header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1em; background: #263238; }
        header a.home { color: #fff; font-weight: 600; text-decoration: none; }
        header label { color: #eceff1; }
        header input { width: 16em; }
        main { padding: .5em 1em 2em; }
        h1 { font-size: 1.4em; margin: .4em 0; } h2 { font-size: 1.1em; } h3 { font-size: 1em; margin: .8em 0 .3em; }
        code, pre { font-family: ui-monospace, monospace; font-size: 12px; }
        pre { margin: 0; white-space: pre-wrap; word-break: break-all; background: #f5f5f5; padding: .3em .5em; }
        .user-id { font-family: ui-monospace, monospace; background: #eceff1; padding: 0 .3em; }
        .live { padding: 0 .4em; border-radius: 3px; } .live.open { background: #c8e6c9; } .live.closed { background: #ffcdd2; }
        .columns { display: flex; gap: 1.5em; align-items: flex-start; }
        .pushes-column { flex: 3; min-width: 0; } .state-column { flex: 2; min-width: 0; }
        details.push { border: 1px solid #cfd8dc; border-radius: 4px; margin: .4em 0; }
        details.push > summary { padding: .4em .6em; cursor: pointer; background: #fafafa; }
        details.push[open] > summary { border-bottom: 1px solid #cfd8dc; }
        .trace { padding: .3em .8em .8em; }
        .sequence { color: #78909c; } .event { font-weight: 600; }
        .counts { margin-left: .6em; } .fired { color: #2e7d32; } .not-fired { color: #757575; } .blocked { color: #c62828; }
        .outcome, .via-header { background: #fff3e0; padding: 0 .3em; border-radius: 3px; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; vertical-align: top; border-bottom: 1px solid #eceff1; padding: .25em .4em; }
        .record-delivery { padding: 0 .3em; border-radius: 3px; background: #eceff1; }
        .record-delivery.delivery-delivered { background: #c8e6c9; }
        .record-delivery.delivery-retrying { background: #fff3e0; }
        .record-delivery.delivery-rejected { background: #ffcdd2; }
        tr.tag[data-outcome="fired"] .tag-outcome { color: #2e7d32; font-weight: 600; }
        tr.tag[data-outcome="blocked"] .tag-outcome { color: #c62828; font-weight: 600; }
        tr.tag[data-outcome="not_fired"] .tag-outcome { color: #757575; }
        .condition, .blocked-by, .reason { margin: 0 0 .2em; }
        .condition code.left { background: #ffebee; } .condition code.right { background: #e8f5e9; }
        .none, .empty, .legend { color: #757575; }
        .version, .nested { color: #78909c; font-weight: normal; }
        .undefined { color: #9e9e9e; font-style: italic; }
        table.charts td { vertical-align: middle; } svg.chart { display: block; }
        """#
}
