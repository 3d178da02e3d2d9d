"""A CSV cell that must hold JSON says what shape it expects, with an example, both when the
cell is not JSON at all and when it is JSON of another kind (a string where a list belongs)."""

from __future__ import annotations

from pathlib import Path

from _cli import convoeval
from convoeval.io import read_records
from convoeval.io.tabular import JSON_SHAPES

HI = '"[{""type"": ""human"", ""content"": ""hi""}]"'
TOPICS = 'reference_topics: expected a JSON list of strings such as ["orders", "shipping"]'


def test_a_json_cell_says_the_shape_it_expects(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text(
        "id,user_input,reference_topics,metadata\n"
        f'a,{HI},"orders, shipping",\n'
        f'b,{HI},"""orders""",\n'
        f'c,{HI},"[""orders""]","[1, 2]"\n'
        'd,hello,"[""orders""]",\n'
        f'e,{HI},"[""orders""]",\n',
        encoding="utf-8",
    )
    problems = [r.problems() for r in read_records(path)]
    assert problems[0] == [
        f"{path}:2: reference_topics: this cell is not valid JSON (Expecting value at character "
        f'1): expected a JSON list of strings such as ["orders", "shipping"]'
    ]
    assert problems[1] == [f"{path}:3: {TOPICS}, got a string"]
    assert problems[2] == [
        f'{path}:4: metadata: expected a JSON object such as {{"source": "web"}}, got a list'
    ]
    assert problems[3] == [
        f"{path}:5: user_input: this cell is not valid JSON (Expecting value at character 1): "
        'expected a JSON list of messages such as [{"type": "human", "content": "Hi"}]'
    ]
    assert problems[4] == []


def test_every_json_column_has_a_shape_with_a_valid_example() -> None:
    from convoeval.io import strict_json
    from convoeval.io.tabular import JSON_COLUMNS

    assert set(JSON_SHAPES) == set(JSON_COLUMNS)
    for column, (kind, text) in JSON_SHAPES.items():
        example = text.partition(" such as ")[2] or text
        if kind is not bool:
            assert isinstance(strict_json.loads(example, column), kind), column


def test_validate_prints_the_expected_shape(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(f'user_input,reference_topics\n{HI},"orders"\n')
    done = convoeval("validate", "d.csv", cwd=tmp_path, timeout=120)
    assert done.returncode == 1
    assert '["orders", "shipping"]' in done.stdout + done.stderr
