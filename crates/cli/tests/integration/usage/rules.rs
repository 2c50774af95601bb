//! Mapping rules that match nothing

use super::*;

#[test]
fn mapping_rules_that_match_nothing_fail_the_dataset_naming_rule_features_and_hint() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    let imagenet = input.join("imagenet/train");
    let tutorial = input.join("tutorial");
    let cases: [(&std::path::Path, &[&str], &str, Option<&str>); 6] = [
        (
            &imagenet,
            &["--rename", "image/clas/label=label"],
            "--rename image/clas/label=label",
            Some("did you mean \"image/class/label\""),
        ),
        (&tutorial, &["--drop", "nosuch"], "--drop nosuch", None),
        (
            &tutorial,
            &["--cast", "nosuch=int32"],
            "--cast nosuch=int32",
            None,
        ),
        (&tutorial, &["--offset", "x=-1"], "--offset x=-1", None),
        (&tutorial, &["--keep", "label"], "--keep label", None),
        (
            &tutorial,
            &["--preset", "imagenet"],
            "--preset imagenet",
            None,
        ),
    ];
    for (n, (dataset, rule, named, hint)) in cases.into_iter().enumerate() {
        let output = work.path().join(format!("out-{n}"));
        let run = ofconvert()
            .arg("tf2of")
            .arg(dataset)
            .arg(&output)
            .args(rule)
            .expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(named), "{named}: {all}");
        assert!(all.contains("matches nothing"), "{named}: {all}");
        let features = if dataset == imagenet {
            "image/class/label, image/class/synset"
        } else {
            "feature0, feature1, feature2, feature3"
        };
        assert!(all.contains(features), "{named}: {all}");
        if let Some(hint) = hint {
            assert!(all.contains(hint), "{named}: {all}");
        }
        assert_eq!(tree(&output), Vec::<String>::new(), "{named}");
    }
    // A rule that matches converts as before.
    ofconvert()
        .arg("tf2of")
        .arg(&tutorial)
        .arg(work.path().join("good"))
        .args(["--drop", "feature3"])
        .ok();
}

#[test]
fn keep_that_leaves_a_record_empty_names_the_rule() {
    use ofconvert_bridge::tf;
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let encode = |example: ofconvert_bridge::proto::tensorflow::Example| {
        let mut bytes = Vec::new();
        ofconvert_bridge::encode_example(&example, &mut bytes);
        bytes
    };
    let records = [
        encode(tf::example([
            ("label", tf::int64_feature([1])),
            ("x", tf::int64_feature([2])),
        ])),
        encode(tf::example([("y", tf::int64_feature([3]))])),
    ];
    write_tfrecord(&input.join("data.tfrecord"), &records);
    let output = work.path().join("out");
    let run = ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg(&output)
        .args(["--keep", "label"])
        .expect_code(1);
    assert!(
        run.stderr.contains("--keep label leaves record #1 of"),
        "{}",
        run.stderr
    );
    assert_eq!(tree(&output), Vec::<String>::new());
}

#[test]
fn rules_if_present_apply_where_a_dataset_of_a_mixed_tree_has_the_feature() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    // Only the tutorial dataset has feature0: --drop fails every other one.
    let strict = ofconvert()
        .arg("tf2of")
        .args([&input, &work.path().join("strict")])
        .args(["--drop", "feature0", "--json"])
        .expect_code(1);
    let summary: serde_json::Value = serde_json::from_str(&strict.stdout).unwrap();
    let datasets = summary["datasets"].as_array().unwrap().len();
    assert!(datasets > 2, "{summary}");
    assert_eq!(summary["failed"], datasets as u64 - 1, "{summary}");

    let out = work.path().join("present");
    let run = ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .args(["--drop-if-present", "feature0", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_eq!(summary["datasets"].as_array().unwrap().len(), datasets);
    let tutorial = manifest(&out.join("tutorial"));
    let names: Vec<&str> = tutorial["schema"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|feature| feature["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["feature1", "feature2", "feature3"]);
    assert_eq!(
        tutorial["settings"]["mapping"][0],
        "--drop-if-present=feature0"
    );

    // A name no dataset has is still a likely typo: every dataset warns of it.
    let typo = ofconvert()
        .arg("tf2of")
        .args([&input, &work.path().join("typo")])
        .args(["--drop-if-present", "featur0", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&typo.stdout).unwrap();
    let warned = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|warning| {
            let warning = warning.as_str().unwrap();
            warning.contains("--drop-if-present featur0 matches nothing")
                && warning.contains("did you mean \"feature0\"?")
        })
        .count();
    assert_eq!(warned, datasets, "{summary}");
}
