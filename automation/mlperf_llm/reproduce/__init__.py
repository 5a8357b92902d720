"""Reproduction by third parties: the record a submission carries of how it was made (record,
capture), reading it back from a submission folder or tarball (source), planning and comparing
a replay on another machine (replay, compare). docs/reproduce.md."""
