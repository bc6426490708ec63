"""The live environments, one package per family (`orthanc_explorer/`, `ohif/`, `dicomscope/`;
`orthanc/` is what the Orthanc-backed ones share), each with its environment, the check kinds of
its application's state, its hooks and its packaged tasks; `registry` lists them."""
