//! The `taintguard` command as users run it: its exit codes, what it prints, and what it says when
//! something is wrong.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_command_writes_the_review_or_says_what_is_wrong() {
    let dir = std::env::temp_dir().join(format!("taintguard-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let node = dir.join("node.yaml");
    std::fs::write(&node, "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\nspec:\n  taints:\n  - key: dedicated\n    value: gpu\n    effect: NoSchedule\n").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_taintguard"))
            .args(args)
            .output()
            .unwrap()
    };
    let node = node.to_str().unwrap();
    let out = run(&[
        "request",
        "--operation",
        "UPDATE",
        "--patch",
        "--service-account",
        "kube-system/node-controller",
        "--object",
        node,
        "--old-object",
        node,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["request"]["name"], "worker-1");
    assert_eq!(review["request"]["options"]["kind"], "PatchOptions");
    assert_eq!(
        review["request"]["object"]["spec"]["taints"][0]["key"],
        "dedicated"
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["request", "--operation", "UPDATE", "--object", node],
            "UPDATE needs the old object",
        ),
        (&["request", "--object", node], "--operation is required"),
        (
            &["request", "--operation", "PATCH"],
            "unknown operation \"PATCH\"",
        ),
        (
            &[
                "request",
                "--operation",
                "CREATE",
                "--object",
                "/nonexistent.yaml",
            ],
            "/nonexistent.yaml",
        ),
    ];
    for (args, want) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
