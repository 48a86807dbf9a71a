"""The web page's sign-ins shared by replicas on PostgreSQL (``heron.server.http.signins``,
issue 47): a browser signed in on one replica is signed in on the other, and signing out
on either signs it out of both."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from heron.server.http import auth
from heron.server.http.signins import SignIns, open_signins
from heron.settings import Settings
from tests.postgres import pg_server, pg_url  # noqa: F401 (fixtures of the PostgreSQL side)

TOKEN = b"one token that every replica of the deployment is given"


def test_a_sign_in_holds_on_every_replica(
    pg_url: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(home=tmp_path, database_url=pg_url)
    with ExitStack() as opened:  # three replicas' sign-ins, each closed at the end
        one, two, three = (opened.enter_context(shared(settings)) for _ in range(3))
        a, b = auth.Sessions(TOKEN, 3600, one), auth.Sessions(TOKEN, 3600, two)
        cookie = a.new()
        sid = a.session_id(cookie)
        assert sid is not None and b.session_id(cookie) == sid  # b learned it from the database
        assert a.csrf(sid) == b.csrf(sid)
        forged = cookie.rsplit(".", 1)[0] + ".0000"
        assert b.session_id(forged) is None
        unknown = auth.Sessions(TOKEN, 3600, three)
        assert unknown.session_id(auth.Sessions(TOKEN, 3600).new()) is None  # made nowhere shared
        b.revoke(cookie)  # signed out on b
        assert b.session_id(cookie) is None
        assert a.session_id(cookie) == sid  # a trusts what it knows for RECHECK seconds
        monkeypatch.setattr(auth, "RECHECK", 0.0)
        assert a.session_id(cookie) is None  # then asks again: signed out everywhere


def shared(settings: Settings) -> SignIns:
    signins = open_signins(settings)
    assert signins is not None  # PostgreSQL
    return signins
