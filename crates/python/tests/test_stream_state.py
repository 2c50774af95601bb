"""RecordStream.load_state_dict refuses what is not a state, saying which keys are missing or
unknown and what a state looks like; a state of an older version is named as one."""

import pytest

import ofconvert
from ofconvert.data import RecordStream


@pytest.fixture
def stream(tmp_path):
    path = tmp_path / "part-0.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(10):
            writer.write({"id": i})
    return RecordStream(path, batch_size=2)


def test_a_dict_that_is_no_state_is_refused_naming_its_keys_and_showing_a_state(stream):
    with pytest.raises(ofconvert.UsageError) as raised:
        stream.load_state_dict({"a": 1})
    message = str(raised.value)
    assert "it lacks 'block_size', 'epoch', 'fingerprint', 'passes', 'position', 'records', 'seed', " \
        "'shuffle', 'version'" in message
    assert "it has 'a', which a state has not" in message
    assert f"this stream's: {stream.state_dict()!r}" in message
    assert "this version of ofconvert" not in message


def test_a_state_missing_a_key_names_only_that_key(stream):
    state = stream.state_dict()
    del state["seed"]
    with pytest.raises(ofconvert.UsageError, match=r"it lacks 'seed';"):
        stream.load_state_dict(state)


def test_what_is_no_dict_is_a_type_error(stream):
    with pytest.raises(TypeError, match=r"a state is the dict state_dict\(\) returns, not list"):
        stream.load_state_dict([("epoch", 0)])


def test_a_state_of_the_first_version_is_named_as_one(stream):
    old = {"epoch": 0, "position": 4, "seed": 0, "shuffle": False, "records": 10}
    with pytest.raises(ofconvert.UsageError, match="not one this version of ofconvert writes"):
        stream.load_state_dict(old)
