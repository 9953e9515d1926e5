"""The web explorer at `/`, in Debian's Chromium through Playwright, against a real
server on loopback: the board and every move's value read from the page equal the
oracle's; a click plays a move and the address follows; undo and the browser's
back button return; a game against the perfect player runs to its end; a shared
link opens its position; the editor and the start picker (an endgame-only
tablebase offers only its own layers). A screenshot is saved as an artifact."""

import pytest
from conftest import BROWSER_ARGS, FIXTURE_M40, ROOT, chromium_path
from oracle_support import random_positions
from serve_support import call, running

from bestemshe_dist import Tablebase
from bestemshe_dist.game.position import Position

ARTIFACT = ROOT / "tests" / "artifacts" / "explorer.png"
GAME_ARTIFACT = ROOT / "tests" / "artifacts" / "explorer-game-won.png"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=BROWSER_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, f"the page's script failed: {errors}"


def compact(pos) -> str:
    return str(pos).replace(" ", ",")


def settle(page, position=None):
    """Wait until the page is idle (and shows `position`, if given)."""
    page.wait_for_selector("body[data-state=ready]")
    if position is not None:
        page.wait_for_function(
            "p => document.getElementById('board').dataset.position === p", arg=str(position)
        )
    page.wait_for_selector("body[data-state=ready]")


def read_page(page) -> dict:
    """Everything the page shows of the position, read from the DOM."""
    return page.evaluate("""() => {
        const pit = (el) => ({index: +el.dataset.index, stones: +el.dataset.stones,
                              value: el.dataset.value || null, dtz: el.dataset.dtz ?? null,
                              button: el.tagName === 'BUTTON', text: el.innerText});
        const v = document.getElementById('verdict');
        return {
          position: document.getElementById('board').dataset.position,
          k1: +document.getElementById('k1').textContent, k2: +document.getElementById('k2').textContent,
          bottom: [...document.querySelectorAll('#row-bottom .pit')].map(pit),
          top: [...document.querySelectorAll('#row-top .pit')].map(pit),
          value: v.dataset.value, dtz: v.dataset.dtz, verdict: v.textContent,
          rows: [...document.querySelectorAll('#moves tbody tr')].map(tr => ({pit: +tr.dataset.pit,
                 value: tr.dataset.value, dtz: tr.dataset.dtz, captured: +tr.dataset.captured})),
          url: location.href,
        };
    }""")


def dtz_text(d) -> str:
    return "" if d is None else str(d)


def check_against_oracle(page, tb, pos):
    """The page's board, value and every move equal the oracle's analysis of `pos`."""
    got = read_page(page)
    found = tb.analyse(pos)
    p = tb.variant.pits
    assert got["position"] == str(pos) and (got["k1"], got["k2"]) == (pos.k1, pos.k2)
    # the mover's row left to right, the other row right to left (sowing goes round)
    assert [x["index"] for x in got["bottom"]] == list(range(p))
    assert [x["index"] for x in got["top"]] == list(range(2 * p - 1, p - 1, -1))
    assert [x["stones"] for x in got["bottom"] + got["top"]] == list(pos.pits[:p]) + list(pos.pits[p:][::-1])
    assert (got["value"], got["dtz"]) == (found.probe.value, dtz_text(found.probe.dtz))
    by_pit = {m.pit: m for m in found.moves}
    for cell in got["bottom"]:
        m = by_pit.get(cell["index"])
        assert cell["button"] == (m is not None)
        if m is not None:
            assert (cell["value"], cell["dtz"]) == (m.value, dtz_text(m.dtz))
            assert m.value in cell["text"]
    ordered = found.ordered_moves()
    assert [(r["pit"], r["value"], r["dtz"], r["captured"]) for r in got["rows"]] == [
        (m.pit + 1, m.value, dtz_text(m.dtz), m.captured) for m in ordered
    ]
    return found


def test_page_shows_the_oracle_and_moves_follow_clicks(tb123, page):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    positions = [
        p
        for value in ("win", "draw", "loss")
        for p in random_positions(tb.variant, tables, 4, seed=5, value=value)
    ]
    with running(Tablebase.open(str(folder))) as base:
        # no position asked: the game's start, which this whole-game tablebase holds
        page.goto(base + "/")
        start = Position.start(tb.variant)
        settle(page, start)
        check_against_oracle(page, tb, start)
        assert page.is_visible("#start-game")
        # the mover's kazan says "side to move" once; no game yet, so no "Game so far"
        assert page.inner_text("#label-bottom") == "side to move"
        assert page.inner_text("#label-top") == "opponent"
        assert page.is_hidden("#history-section")
        for pos in positions:
            page.goto(f"{base}/?pos={compact(pos)}")  # a shared link
            settle(page, pos)
            found = check_against_oracle(page, tb, pos)
        # click a move that leads somewhere: the child is shown and the address follows it
        pos = next(p for p in positions if any(not m.ends_game for m in tb.moves(p)))
        page.goto(f"{base}/?pos={compact(pos)}")
        settle(page, pos)
        move = next(m for m in tb.moves(pos) if not m.ends_game)
        page.click(f"#row-bottom button[data-index='{move.pit}']")
        settle(page, move.child)
        check_against_oracle(page, tb, move.child)
        assert page.url.endswith(f"?pos={compact(move.child)}")
        assert page.is_visible("#history-section")
        assert page.inner_text("#history").strip().startswith(f"pit {move.pit + 1}")
        page.click("#undo")
        settle(page, pos)
        assert page.inner_text("#history").strip() == "" and page.is_disabled("#undo")
        assert page.is_hidden("#history-section")
        # the moves table plays too, and the browser's back button comes back
        page.click(f"#moves tbody tr[data-pit='{move.pit + 1}']")
        settle(page, move.child)
        page.go_back()
        settle(page, pos)
        check_against_oracle(page, tb, pos)
        # the mainline on the page is the oracle's
        page.click("#show-mainline")
        page.wait_for_selector("#mainline-note[data-result]")
        line = tb.mainline(pos, max_plies=400)
        shown = page.eval_on_selector_all("#mainline li", "els => els.map(e => +e.dataset.pit)")
        assert shown == [p.move.pit + 1 for p in line.plies]
        assert page.get_attribute("#mainline-note", "data-result") == line.result
        found = tb.analyse(pos)
        assert found.probe.value in ("win", "draw", "loss")


def _play_out(page, pick, limit=400):
    """Play the human's side with `pick(page)` until the game is over; the plies played."""
    for _ in range(limit):
        page.wait_for_function("""() => document.body.dataset.game === 'over' ||
            (document.body.dataset.state === 'ready' &&
             document.getElementById('label-bottom').textContent.startsWith('you'))""")
        if page.evaluate("document.body.dataset.game") == "over":
            return page.eval_on_selector_all("#history li", "els => els.map(e => e.textContent)")
        page.click(pick(page))
    raise AssertionError("the game did not end")


def test_a_game_against_the_perfect_player_runs_to_its_end(tb123, page):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    won = next(
        p
        for p in random_positions(tb.variant, tables, 50, seed=11, value="win")
        if tb.probe(p).dtz and tb.probe(p).dtz >= 3
    )
    with running(Tablebase.open(str(folder))) as base:
        # the human takes the page's best move each time: the game is the oracle's mainline
        page.goto(f"{base}/?pos={compact(won)}")
        settle(page, won)
        page.select_option("#play-side", "mover")
        page.click("#play")
        played = _play_out(page, lambda page: "#moves tbody tr >> nth=0")
        line = tb.mainline(won, max_plies=400)
        assert line.result == "win"
        assert [int(t.split()[1].rstrip(",")) for t in played] == [p.move.pit + 1 for p in line.plies]
        assert [t.endswith("(you)") for t in played] == [i % 2 == 0 for i in range(len(played))]
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(GAME_ARTIFACT), full_page=True)
        message = page.inner_text("#message")
        assert message.startswith(("You played", "The oracle has no stone")) and "won the game" in message
        # the oracle moves first from a position it wins; the human always sows the
        # lowest pit, and loses (distance tables make the oracle's conversion certain)
        lost = next(
            p
            for p in random_positions(tb.variant, tables, 50, seed=12, value="win")
            if tb.probe(p).dtz and tb.probe(p).dtz >= 3
        )
        page.goto(f"{base}/?pos={compact(lost)}")
        settle(page, lost)
        page.select_option("#play-side", "other")
        page.click("#play")
        played = _play_out(page, lambda page: "#row-bottom button.pit >> nth=0")
        assert played[0].endswith("(oracle)")
        message = page.inner_text("#message")
        assert message.startswith(("The oracle played", "You have no stone")) and "won the game" in message
        assert page.evaluate("document.body.dataset.game") == "over"
        # undo in a game goes back to the human's turn and the game goes on
        page.click("#undo")
        page.wait_for_function(
            "document.body.dataset.game === 'playing' && document.body.dataset.state === 'ready'"
        )
        assert page.inner_text("#label-bottom").startswith("you")


def test_endgame_only_tablebase_picker_editor_and_screenshot(page):
    tb = Tablebase.open(str(FIXTURE_M40))
    held = tb.layers()
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        page.goto(base + "/")
        page.wait_for_selector("body[data-state=ready] #row-bottom .pit")
        settle(page)
        # no game start here: the page opens a position of a layer the tablebase holds
        assert not page.is_visible("#start-game")
        first = tb.position(read_page(page)["position"])
        assert first.layer in held
        check_against_oracle(page, tb, first)
        offered = page.eval_on_selector_all("#layer-select option", "els => els.map(e => e.value)")
        assert sorted(offered) == sorted(f"{a}_{b}" for a, b in held)
        # a random symmetric position of a chosen layer
        page.select_option("#layer-select", "20_20")
        page.check("#symmetric")
        before = read_page(page)["position"]
        page.click("#random")
        page.wait_for_function("p => document.getElementById('board').dataset.position !== p", arg=before)
        settle(page)
        pos = tb.position(read_page(page)["position"])
        assert pos.layer == (20, 20) and sum(pos.own) == sum(pos.other) and pos.legal_pits()
        check_against_oracle(page, tb, pos)
        # a symmetric position asked of a layer with unequal kazans: the server's sentence
        page.select_option("#layer-select", "18_22")
        page.click("#random")
        page.wait_for_function(
            "document.getElementById('message').textContent.includes('no symmetric position')"
        )
        # the editor: a bad position is the API's one sentence, a good one opens
        page.click("#edit")
        page.fill("#edit-text", "20 20 1 1 1 1 1 1 1 1 1 9")
        page.click("#edit-apply")
        page.wait_for_function("document.getElementById('edit-error').textContent.length > 0")
        error = page.inner_text("#edit-error")
        status, body = call(f"{base}/api/position?pos=20,20,1,1,1,1,1,1,1,1,1,9")
        assert status == 400 and error == body["error"] and error.count(".") >= 1
        assert read_page(page)["position"] == str(pos)  # nothing changed
        page.fill("#edit-text", "")
        for i, stones in enumerate([2, 0, 3, 1, 0, 0, 1, 2, 0, 1]):
            page.fill(f"[data-edit-index='{i}']", str(stones))
        page.fill("#edit-k1", "22")
        page.fill("#edit-k2", "18")
        page.click("#edit-apply")
        edited = tb.position("22 18 2 0 3 1 0 0 1 2 0 1")
        settle(page, edited)
        assert page.is_hidden("#editor")
        check_against_oracle(page, tb, edited)
        # a layer this tablebase does not hold: another position stands in, and the
        # page says so, naming the layer asked for and the one shown
        page.goto(f"{base}/?pos=0,0,5,5,5,5,5,5,5,5,5,5")
        page.wait_for_selector("#message[data-substitute]")
        settle(page)
        shown = tb.position(read_page(page)["position"])
        assert shown.layer in held
        assert page.is_visible("#message") and page.inner_text("#message") == (
            f"layer 0_0 is not in this tablebase; showing a random position of layer "
            f"{shown.layer[0]}_{shown.layer[1]} instead."
        )
        page.goto(f"{base}/?pos={compact(edited)}")
        settle(page, edited)
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACT), full_page=True)
    assert ARTIFACT.stat().st_size > 10_000
