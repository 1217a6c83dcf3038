"""`paddock server --store postgres://…` (issue 16): the whole API on a PostgreSQL database of the
test's own, surviving kill -9 of the server and of PostgreSQL, and `paddock admin export` /
`import` moving a state between SQLite and PostgreSQL."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import paddock_harness as h
import pg_harness


def admin(state_dir, store_url, *args, stdin=None):
    cmd = [h.paddock_bin(), "admin", "--state-dir", state_dir, "--store", store_url or ""]
    return subprocess.run(cmd + list(args), input=stdin, capture_output=True, timeout=120)


class PostgresStore(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = pg_harness.Postgres()  # its own: this module kills it
        cls.addClassCleanup(cls.pg.stop)
        cls.tmp = tempfile.mkdtemp(prefix="paddock-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.addClassCleanup(h.stop_leftover_tasks)

    def start(self, state_dir, url):
        # --store "" is the state directory's SQLite, whatever PADDOCK_TEST_STORE asks of the harness.
        server = h.Server(state_dir, ["--store", url or ""])
        server.start()
        self.addCleanup(server.stop)
        return server

    def account(self, state_dir, url):
        acct = json.loads(admin(state_dir, url, "create-account", "--name", "main").stdout)["account"]
        key = json.loads(admin(state_dir, url, "create-access-key", "--account", acct).stdout)
        return key["accessKeyId"], key["secretAccessKey"]

    def test_the_api_on_postgres_survives_kill_9_of_the_server_and_of_postgres(self):
        url = self.pg.database("api")
        state = os.path.join(self.tmp, "api")
        migrated = admin(state, url, "migrate")
        self.assertEqual(migrated.returncode, 0, migrated.stderr)
        self.assertIn('"ecs":', migrated.stdout.decode())
        kid, secret = self.account(state, url)
        server = self.start(state, url)
        ecs = h.ecs_client(server.endpoint, kid, secret)
        ecs.create_cluster(clusterName="on-pg", tags=[{"key": "k", "value": "v"}])
        arn = ecs.register_task_definition(**h.td_min("pgapp"))["taskDefinition"]["taskDefinitionArn"]
        ecs.create_service(cluster="on-pg", serviceName="svc", taskDefinition="pgapp", desiredCount=0, launchType="EC2")
        # Nothing is in the state directory's SQLite file: the records are in PostgreSQL.
        self.assertEqual(self.pg.psql("api", "SELECT count(*) FROM t_clusters").stdout.strip(), "1")

        server.kill()
        server = self.start(state, url)
        ecs = h.ecs_client(server.endpoint, kid, secret)
        self.assertEqual(ecs.describe_clusters(clusters=["on-pg"], include=["TAGS"])["clusters"][0]["tags"],
                         [{"key": "k", "value": "v"}])
        self.assertEqual(ecs.describe_task_definition(taskDefinition="pgapp")["taskDefinition"]["taskDefinitionArn"], arn)

        # PostgreSQL itself killed: the request in the gap fails, the acknowledged state is all there,
        # and the same server serves again once PostgreSQL is back (no restart of Paddock).
        self.pg.kill()
        with self.assertRaises(Exception):
            ecs.describe_clusters(clusters=["on-pg"])
        self.pg.restart()
        self.assertEqual(ecs.describe_services(cluster="on-pg", services=["svc"])["services"][0]["status"], "ACTIVE")
        ecs.register_task_definition(**h.td_min("pgapp"))
        self.assertEqual(len(ecs.list_task_definitions(familyPrefix="pgapp")["taskDefinitionArns"]), 2)

    def test_export_and_import_move_a_state_between_sqlite_and_postgres(self):
        lite = os.path.join(self.tmp, "lite")
        kid, secret = self.account(lite, None)
        server = self.start(lite, None)
        ecs = h.ecs_client(server.endpoint, kid, secret)
        ecs.create_cluster(clusterName="moving")
        ecs.register_task_definition(**h.td_min("moved"))
        exported = admin(lite, None, "export")  # while the server runs: one snapshot
        self.assertEqual(exported.returncode, 0, exported.stderr)
        self.assertTrue(exported.stdout.startswith(b'{"paddock-store-dump":1'))
        server.stop()

        url = self.pg.database("moved")
        imported = admin(os.path.join(self.tmp, "pg"), url, "import", stdin=exported.stdout)
        self.assertEqual(imported.returncode, 0, imported.stderr)
        # Into a store that has rows: refused, nothing changed.
        again = admin(os.path.join(self.tmp, "pg"), url, "import", stdin=exported.stdout)
        self.assertNotEqual(again.returncode, 0)
        self.assertIn(b"not empty", again.stderr)
        # Exported again from PostgreSQL: byte for byte the same rows, in the same order.
        back = admin(os.path.join(self.tmp, "pg"), url, "export")
        self.assertEqual(back.returncode, 0, back.stderr)
        self.assertEqual(back.stdout, exported.stdout)
        # The same key works on PostgreSQL: accounts, keys and resources all moved (and the node key
        # with them, or the server is refused: what it sealed would not open).
        h.share_node_key(lite, os.path.join(self.tmp, "pg"))
        server = self.start(os.path.join(self.tmp, "pg"), url)
        ecs = h.ecs_client(server.endpoint, kid, secret)
        self.assertEqual(ecs.describe_clusters(clusters=["moving"])["clusters"][0]["status"], "ACTIVE")
        self.assertEqual(ecs.describe_task_definition(taskDefinition="moved:1")["taskDefinition"]["family"], "moved")
        # And back into a new SQLite state directory, where the same key finds the same resources.
        server.stop()
        moved = admin(os.path.join(self.tmp, "pg"), url, "export")
        returned = os.path.join(self.tmp, "returned")
        r = admin(returned, None, "import", stdin=moved.stdout)
        self.assertEqual(r.returncode, 0, r.stderr)
        h.share_node_key(lite, returned)
        server = self.start(returned, None)
        ecs = h.ecs_client(server.endpoint, kid, secret)
        self.assertEqual(ecs.describe_clusters(clusters=["moving"])["clusters"][0]["status"], "ACTIVE")

    def test_a_store_url_that_is_not_postgres_is_refused(self):
        r = admin(os.path.join(self.tmp, "bad"), "mysql://x/y", "migrate")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"postgres://", r.stderr)


if __name__ == "__main__":
    unittest.main()
