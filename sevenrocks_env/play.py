"""``sevenrocks play``: sit at one seat yourself against (and with) any agents, in the terminal.

    sevenrocks play --seat 0 --partner heuristic --opponents ckpt:shipped

Each turn shows the text board, your hand and your legal moves as a numbered list in plain
words ("3|5 on the east end -> end sum 15, scores 15").  Answer with the number or with a tile
and an end (``3-5 e``, ``3|5 east``; the end may be left out when only one fits).  A wrong
answer is refused with the reason and asked again.  A forced knock plays itself after a note.
``q``, end of input, Ctrl-C, a closed terminal or ``kill`` stops and saves the match as a game
record (in ``games/`` unless ``--record`` says where; a bad ``--record`` is refused before the
game starts).  In a terminal the game pauses between rounds until Enter.  Knocks are announced;
at each round's end every hand is shown with its rounding, the deductions and the scores (R7).
Answers are UTF-8 text: at a terminal another encoding's answer is refused and asked again;
piped input that is not UTF-8 ends the game (saved).  Reads plain lines, so it works with a
pipe::

    printf '1\\n1\\n1\\n' | sevenrocks play --seat 0 --seed 3 --opponents random
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from . import record as records
from .agents import make_agent
from .driver import AgentError, MatchDriver, agent_name
from .play_answers import MAX_ANSWER, parse_answer, printable
from .play_record import existing_file_problem, record_path_problem, unused_path
from .rules import Match, apply_action, legal_actions, partner_of, round_to_five, team_of
from .render.text import describe_move, render_text, round_result
from .tiles import KNOCK, decode_action, pips_of, pips_words, tile_name, tiles_of

#: Where the rule sections cited in help texts and errors are written down.
RULES_EPILOG = "R1-R8 are the sections of the rules in docs/rules.md"
#: Default folder of game records (git-ignored).
GAMES = "games"
PLACE_WORDS = ("the west end", "the east end", "branch A (north)", "branch B (south)")


def outcome(match: Match, action: int) -> tuple[int, int]:
    """(end sum, points) that ``action`` would give, without touching ``match`` (R5)."""
    trial = match.clone()
    trial.seed = None  # a round that ends here must not deal the next one
    points = apply_action(trial, action)
    return trial.last_end_sum, points


def move_words(match: Match, action: int) -> str:
    """A legal move in plain words: ``"3|5 on the east end -> end sum 15, scores 15"``."""
    if action == KNOCK:
        return "knock (no tile fits)"
    tile, slot = decode_action(action)
    where = "to open the round" if match.opening else f"on {PLACE_WORDS[slot]}"
    total, points = outcome(match, action)
    text = f"{tile_name(tile)} {where} -> end sum {total}, " + (
        f"scores {points}" if points else "no points")
    if points and match.scores[team_of(match.turn)] + points >= match.target:
        text += " and WINS the match"
    return text


#: Most characters of one line read before the input is taken as ended: ``< /dev/zero`` has
#: no line end and looped for ever.
MAX_LINE = 1 << 20


def deduction_text(points: int) -> str:
    """``-15``, or ``no deduction`` (never ``-0``)."""
    return f"-{points}" if points else "no deduction"


def round_summary(log) -> list[str]:
    """Every remaining hand with its rounding and deduction, and the scores (R7, R8)."""
    remaining = log.remaining_hands()
    lines = [round_result(log)]
    if log.result != "won":
        for seat in range(4):
            pips = pips_of(remaining[seat])
            hand = " ".join(tile_name(t) for t in tiles_of(remaining[seat])) or "(empty)"
            lines.append(f"  seat {seat}: {hand:<24} {pips_words(pips):>7} -> rounds to "
                         f"{round_to_five(pips):>2}, team {team_of(seat)} "
                         f"{deduction_text(log.deductions[seat])}")
    lines.append(f"  scores: team 0 {log.scores[0]}, team 1 {log.scores[1]}")
    return lines


def _check_utf8(line: str) -> None:
    """``UnicodeDecodeError`` for a line holding bytes that are not UTF-8 (read with
    ``surrogateescape``, they are the lone surrogates U+DC80..U+DCFF)."""
    bad = next((i for i, c in enumerate(line) if "\udc80" <= c <= "\udcff"), None)
    if bad is not None:
        raise UnicodeDecodeError("utf-8", line.encode("utf-8", "surrogateescape"), bad, bad + 1,
                                 "not UTF-8 text")


class Session:
    """One terminal match: the human's seat, the agents at the others, input and output streams."""

    def __init__(self, seat: int, agents: dict, seed: int, target: int, stdin, stdout,
                 echo: bool, pause: bool = False):
        self.seat, self.agents = seat, agents
        self.match = Match.new(seed, target=target)
        self.stdin, self.stdout, self.echo, self.pause = stdin, stdout, echo, pause

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def ask(self, prompt: str) -> str | None:
        while True:
            self.stdout.write(prompt)
            self.stdout.flush()
            line = self.stdin.readline(MAX_ANSWER + 1)
            if not line:
                self.say("(end of input)")
                return None
            long = len(line) > MAX_ANSWER and not line.endswith("\n")
            try:
                _check_utf8(line)
            except UnicodeDecodeError:
                if not self.pause:  # piped input: the game ends (saved)
                    raise
                refusal = "not UTF-8 text (set the terminal to UTF-8)"  # a terminal: ask again
            else:
                if not long:
                    break
                refusal = f"an answer is at most {MAX_ANSWER} characters"
            if not long:
                self.say(f"  not accepted: {refusal}")
                continue
            dropped = 0
            while line and not line.endswith("\n"):  # drop the rest of the long line unread
                dropped += len(line)
                if dropped > MAX_LINE:  # a stream with no line end (< /dev/zero) is not input
                    self.say(f"\n(no line end in {MAX_LINE} characters: end of input)")
                    return None
                line = self.stdin.readline(MAX_ANSWER + 1)
            self.say(f"\n  not accepted: {refusal}")
        if self.echo:  # printable only: a pasted escape sequence must not reach the terminal
            self.say(printable(line.rstrip("\r\n")))
        return line

    def human_turn(self) -> int | None:
        """Show the board and the numbered legal moves; return the chosen action or None to quit."""
        match = self.match
        legal = legal_actions(match)
        self.say()
        self.say(render_text(match, observer=self.seat))
        if legal == [KNOCK]:
            self.say("no tile of yours fits any open end: you knock (R6)")
            return KNOCK
        self.say(f"your move, seat {self.seat}:")
        for number, action in enumerate(legal, start=1):
            self.say(f"  {number:>2}. {move_words(match, action)}")
        while True:
            answer = self.ask("choose a number, a tile and end like '3-5 e', or q to quit: ")
            if _quits(answer):
                return None
            try:
                return parse_answer(answer, match, legal)
            except ValueError as reason:
                self.say(f"  not accepted: {reason}")

    def run(self) -> bool:
        """Play until the match ends (True) or the human quits (False).

        The match flow is :class:`~sevenrocks_env.driver.MatchDriver`'s, as in the arena: the
        agents' forced moves play themselves; the human's seat stops the driver on every turn
        (a forced knock then plays itself after a note, see :meth:`human_turn`)."""
        match = self.match
        self._round = match.history[-1]
        driver = MatchDriver(match, self.agents, on_move=self.announce, ask_forced=(self.seat,))
        try:
            while driver.advance() is not None:
                action = self.human_turn()
                if action is None:
                    return False
                driver.play(action)
        except _Quit:
            return False
        self.say()
        if match.winner is not None:
            mine = team_of(self.seat) == match.winner
            self.say(f"team {match.winner} wins: team 0 {match.scores[0]}, team 1 "
                     f"{match.scores[1]}"
                     + (" - your team wins!" if mine else " - your team loses."))
        else:
            self.say(f"stopped after the round limit: team 0 {match.scores[0]}, team 1 "
                     f"{match.scores[1]}")
        return True

    def announce(self, match: Match, seat: int, action: int, points: int, forced: bool) -> None:
        """The driver's move hook: say the move; at a round's end show every hand, the
        deductions and the scores (R7), then pause in a terminal."""
        log = self._round
        who = "you" if seat == self.seat else f"seat {seat} ({agent_name(self.agents[seat])})"
        if action == KNOCK:
            self.say(f">> {who} knock{'' if seat == self.seat else 's'}: no tile fits")
        else:
            self.say(f">> {who}: {describe_move(log, len(log.moves) - 1).split(': ', 1)[1]}")
        if log.result is None:
            return
        self._round = match.history[-1]
        self.say()
        for text in round_summary(log):
            self.say(text)
        if self.pause and not match.over and _quits(self.ask(
                "press Enter for the next round (q to quit): ")):
            raise _Quit


#: Signals that end a game as Ctrl-C does: the terminal window closed (SIGHUP), ``kill PID``
#: (SIGTERM).  Windows has no SIGHUP.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGTERM")
                       if hasattr(signal, name))


class _Ended(KeyboardInterrupt):
    """One of :data:`ENDING_SIGNALS`, raised as Ctrl-C is (the game stops, saved); the exit
    status is then the shell's for that signal, 128 + its number (143 for SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _as_ctrl_c(signum, frame):
    raise _Ended(signum)


@contextmanager
def ended_as_ctrl_c():
    """While in the block, :data:`ENDING_SIGNALS` stop the game as Ctrl-C does, so the game
    record is saved: by default they ended the process at once and the record was lost.  A
    signal ignored on purpose (``nohup``) or handled by the caller is left as it is; only the
    main thread can set signal handlers, elsewhere (a test's thread) this is a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [number for number in ENDING_SIGNALS if signal.getsignal(number) is signal.SIG_DFL]
    for number in taken:
        signal.signal(number, _as_ctrl_c)
    try:
        yield
    finally:
        for number in taken:
            signal.signal(number, signal.SIG_DFL)


class _Quit(Exception):
    """The human quit at the pause between rounds."""


def _quits(answer: str | None) -> bool:
    """The answer ends the game: end of input, or q / quit / exit (any case)."""
    return answer is None or answer.strip().lower() in ("q", "quit", "exit")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sevenrocks play",
                                     description="Play one seat of Seven Rocks in the terminal. "
                                     "Answer each turn with a move's number, or a tile and an end "
                                     "(3-5 e, 3|5 east; ends: w/west, e/east, n/north/a for "
                                     "branch A, s/south/b for branch B; left out when only one "
                                     "fits); q, end of input or Ctrl-C stops and saves the game "
                                     "record.",
                                     epilog=RULES_EPILOG,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--seat", type=int, default=0, choices=range(4), help="your seat (0-3)")
    parser.add_argument("--partner", default="heuristic", help="agent spec of your partner")
    parser.add_argument("--opponents", nargs="+", default=["heuristic"], metavar="SPEC",
                        help="agent spec of both opponents, or two specs (left, right)")
    parser.add_argument("--seed", type=int, default=None, help="deal seed (None: drawn at random)")
    parser.add_argument("--target", type=int, default=250, help="points to win (R8)")
    parser.add_argument("--record", default=None,
                        help=f"where to save the game record (None: {GAMES}/sevenrocks-game-"
                             "SEED.json)")
    return parser


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
    """CLI entry point: 0 when the match ended or was quit (record saved), 2 for bad arguments."""
    try:
        args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if stdin is None:
        stdin = sys.stdin
        if stdin is None:  # started with stdin closed (<&-): no answers can come
            print("error: standard input is closed: nowhere to read your moves from",
                  file=sys.stderr)
            return 2
        # undecodable bytes end the game with a clear line, whatever the locale says, at the
        # line that holds them: a strict decoder failed on the whole chunk read, and the
        # answers before the bad line in that chunk were lost (Session.ask checks each line)
        try:
            stdin.reconfigure(encoding="utf-8", errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
    stdout = sys.stdout if stdout is None else stdout
    if stdout is None:  # started with stdout closed (>&-): nowhere to show the game
        if sys.stderr is not None:
            print("error: standard output is closed: nowhere to show the game", file=sys.stderr)
        return 2
    if len(args.opponents) > 2:
        print("error: --opponents takes one spec (both) or two (left, right)", file=sys.stderr)
        return 2
    if not 0 < args.target <= records.MAX_TARGET:
        print(f"error: --target must be in 1..{records.MAX_TARGET}", file=sys.stderr)
        return 2
    # a drawn seed is not shown before the game: it would tell every hidden hand (as the web page)
    seed = secrets.randbelow(2**63) if args.seed is None else args.seed
    if not 0 <= seed < 2**63:
        print("error: --seed must be in 0..2**63-1", file=sys.stderr)
        return 2
    if args.record is not None and not args.record.strip():
        print("error: --record is empty: give a file name (or leave --record out)",
              file=sys.stderr)
        return 2
    if args.record and args.record.endswith(("/", os.sep)):  # Path() would drop the slash
        print(f"error: --record {args.record}: names a folder; give a file name",
              file=sys.stderr)
        return 2
    path = Path(args.record) if args.record else \
        unused_path(Path(GAMES) / f"sevenrocks-game-{seed}.json")
    problem = record_path_problem(path, default=not args.record)
    if problem:
        print(f"error: --record {path}: {problem}", file=sys.stderr)
        return 2
    left, right = (args.opponents * 2)[:2]
    specs = {partner_of(args.seat): args.partner, (args.seat + 1) % 4: left,
             (args.seat + 3) % 4: right}
    try:
        problem = existing_file_problem(path, specs.values())
        if problem:
            print(f"error: --record {path}: {problem}", file=sys.stderr)
            return 2
        agents = {s: make_agent(spec, seed=seed * 4 + s) for s, spec in specs.items()}
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # while loading the agents (torch, a checkpoint: seconds)
        print("interrupted before the game started", file=sys.stderr)
        return 130
    interactive = getattr(stdin, "isatty", lambda: False)()
    session = Session(args.seat, agents, seed, args.target, stdin, stdout,
                      echo=not interactive, pause=interactive)
    told = "" if args.seed is None else f", seed {seed}"
    status, how = 0, None
    try:  # (the first line too: an output full from the start still saves the deal)
        session.say(f"Seven Rocks{told}: you are seat {args.seat} (team {team_of(args.seat)}); "
                    f"partner seat {partner_of(args.seat)} = {args.partner}; opponents seat "
                    f"{(args.seat + 1) % 4} = {left}, seat {(args.seat + 3) % 4} = {right}")
        with ended_as_ctrl_c():  # the terminal closed, kill PID: saved as after Ctrl-C
            finished = session.run()
    except KeyboardInterrupt as stop:
        finished, how = False, "interrupted"
        status = 128 + stop.signum if isinstance(stop, _Ended) else 130
    except UnicodeDecodeError:
        finished, status, how = False, 2, "error: input is not UTF-8 text"
    except AgentError as error:  # an agent failed, or chose an illegal move (a hostile checkpoint)
        finished, status, how = False, 2, f"error: {error}"
    except UnicodeEncodeError as error:  # a stdout given without escapes (the CLI's has them)
        finished, status, how = False, 1, f"error: cannot write the game: {error.reason}"
    except OSError as error:  # the output closed (| head) or full: the record is still saved
        finished, status, how = False, 1, f"error: cannot write the game: {error.strerror or error}"
        if isinstance(error, BrokenPipeError) and stdout is sys.stdout:
            from .cli import silence_stdout
            silence_stdout()  # else the exit's flush fails again (status 120)
    try:
        if path.parent != Path("") and not path.parent.exists():
            path.parent.mkdir(parents=True)  # only the default games/ folder gets here
        if path.is_file() or path.is_symlink():  # made during the game (a game of this seed)
            path = unused_path(path)
        records.save(records.game_record(session.match), path)
    except (OSError, ValueError) as error:  # ValueError: the path became a folder meanwhile
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        print(f"error: cannot save the record to {path}: {reason}", file=sys.stderr)
        return 2
    if how is not None:
        print(f"\n{how}; game record saved to {path}", file=sys.stderr)
        return status
    session.say(("match over" if finished else "quit") + f"; game record saved to {path}")
    return 0


if __name__ == "__main__":  # as `sevenrocks play`: stdout errors in one line
    from .cli import run_as
    sys.exit(run_as("play"))
