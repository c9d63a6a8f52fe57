"""Reading training configs from YAML text: files and ``--set`` values (untrusted input).

Keys must be unique in a mapping (plain YAML keeps the last of two), files are bounded in size
and must be text (UTF-8, UTF-16 or UTF-32: :func:`sevenrocks_env.textfile.decoded`), and every
failure -- syntax, nesting too deep, an integer of thousands of digits -- is one short
:class:`ConfigError` line.  What the values mean and which are allowed is
:mod:`training.config`'s business.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sevenrocks_env.checks import shown
from sevenrocks_env.textfile import read_text

#: Largest config file read (configs are a few hundred bytes; PyYAML takes ~2 s to read 64 kB
#: of a flow list, and 30 s for 1 MB).
MAX_CONFIG_BYTES = 64 * 1024
#: Longest number written in a config (PyYAML reads ``1:2:3:...``, a base-60 integer, in time
#: quadratic in its length: 160 kB of it took 4 s).
MAX_NUMBER_CHARS = 100


#: The configs that travel with the package (``training/configs`` links to the checkout's
#: ``configs/``, as ``sevenrocks_env/shipped`` does to ``checkpoints/shipped``), by the name
#: ``--config`` takes for them where no file of that name is: make train's and make smoke's.
PACKAGED_CONFIGS = {name: Path(__file__).resolve().parent / "configs" / f"{name}.yaml"
                    for name in ("default", "smoke")}


def config_file(text: str) -> Path:
    """The file ``--config TEXT`` names: the path ``TEXT``, or where no such file is (nothing,
    or a folder of that name), the packaged config of that name (``default``: make train's;
    ``smoke``); a path that is neither is read as given (its error then names the packaged
    ones too)."""
    path = Path(text).expanduser()
    if not path.is_file() and text in PACKAGED_CONFIGS:
        return PACKAGED_CONFIGS[text]
    return path


class ConfigError(ValueError):
    """A configuration file or override that cannot be used (``key``: the field it is about;
    ``others``: further fields a rule about a combination of values involves)."""

    def __init__(self, message: str, key: str | None = None, others: tuple[str, ...] = ()):
        super().__init__(message)
        self.key = key
        self.others = others


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (plain YAML keeps the
    last one without a word, so ``seed: 1`` ... ``seed: 7`` would train with 7)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *base``: merged by the parent
                key = "<<"  # once: ``<<: [*a, *b]`` merges several, a second ``<<`` replaces
            else:
                key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {shown(key)} is given twice", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def _short_number(self, node):
        if len(node.value) > MAX_NUMBER_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value):,} characters (at most "
                f"{MAX_NUMBER_CHARS})", node.start_mark)

    def _no_yaml11_surprise(self, node, value, integer: bool):
        """``value`` as read, unless YAML 1.1 read the text as another number than it shows:
        ``010`` is 8 (octal) and ``1:30`` is 90 (base 60), a seed or a number of minutes
        silently not the one written.  Refused, saying so."""
        digits = node.value.lstrip("+-").replace("_", "")
        if ":" in digits:
            kind = "a base-60 number"
        elif integer and len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            kind = "an octal number"
        else:
            return value
        raise yaml.constructor.ConstructorError(
            None, None, f"{shown(node.value)} is {kind} in YAML 1.1, read as {value!r}: write "
            "the number without ':' or a leading 0 (text: quote it)", node.start_mark)

    def construct_yaml_int(self, node):
        self._short_number(node)
        return self._no_yaml11_surprise(node, super().construct_yaml_int(node), True)

    def construct_yaml_float(self, node):
        self._short_number(node)
        return self._no_yaml11_surprise(node, super().construct_yaml_float(node), False)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float",
                                 _UniqueKeyLoader.construct_yaml_float)


#: What YAML counts as a line break (YAML 1.1, as PyYAML's marks count lines).
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _read_yaml(text: str, source: str):
    """``yaml.safe_load`` (keys unique) with every failure (syntax, a repeated key, nesting too
    deep, over-long integers) as one short :class:`ConfigError` line."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.reader.ReaderError as error:  # a control character: no problem, no mark
        lines = _LINE_BREAK.split(text[:error.position])  # (YAML's line breaks, as its marks)
        line, column = len(lines), len(lines[-1]) + 1
        raise ConfigError(f"{source} is not valid YAML: character #x{error.character:04x} is not "
                          f"allowed (line {line}, column {column})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ConfigError(f"{source} is not valid YAML: {str(problem)[:120]}{where}") from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as error:  # e.g. a 5000-digit integer
        raise ConfigError(f"{source}: unreadable value ({str(error)[:80]})") from None


def load_yaml_file(path) -> dict:
    """A config file as a dict: at most :data:`MAX_CONFIG_BYTES`, text, a YAML mapping."""
    try:
        text = read_text(path, MAX_CONFIG_BYTES, "config file")
    except ValueError as error:
        missing = not Path(path).exists()
        raise ConfigError(str(error) + ("; the package's own: --config default (make train's) "
                                        "or --config smoke" if missing else "")) from None
    loaded = _read_yaml(text, str(path))
    if loaded is None or loaded == {}:  # a mistake (an empty FIFO read as one trained for hours)
        raise ConfigError(f"{path}: holds no settings (empty, or comments only); give the "
                          "fields to set, e.g. seed: 1 (--config default is make train's)")
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping of key: value, got {type(loaded).__name__}")
    return loaded
