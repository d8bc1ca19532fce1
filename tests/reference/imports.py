# Imports to check against python -X importtime (tests/reference.bats):
# dotted names (a.b imports a inside its own import), a package whose body
# imports the submodule asked for (json.decoder), and deep trees (email).
import json.decoder
import xml.dom.minidom
import email.mime.text
import http.client
