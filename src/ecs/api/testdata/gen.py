import json, os, sys
OUT = sys.argv[1]
ACCT="123456789012"; R="us-east-1"
def carn(n): return f"arn:aws:ecs:{R}:{ACCT}:cluster/{n}"
def tdarn(f,r): return f"arn:aws:ecs:{R}:{ACCT}:task-definition/{f}:{r}"
ROOT=f"arn:aws:iam::{ACCT}:root"
OTHER="210987654321"
def cluster(n, status="ACTIVE", settings=None, tags=None, cps=None, strat=None):
    return {"clusterArn":carn(n),"clusterName":n,"status":status,
            "registeredContainerInstancesCount":0,"runningTasksCount":0,"pendingTasksCount":0,"activeServicesCount":0,
            "statistics":[],"tags":tags or [],"settings":settings if settings is not None else [],
            "capacityProviders":cps or [],"defaultCapacityProviderStrategy":strat or []}
DIS=[{"name":"containerInsights","value":"disabled"}]
def err(t,m): return {"__type":t,"message":m}
def cc(n, **kw): return {"action":"CreateCluster","request":dict({"clusterName":n},**kw)}
cases=[]
def case(action,name,req,resp,setup=None,status=None):
    cases.append((action,name,req,resp,setup,status))

# ---------- CreateCluster ----------
case("CreateCluster","default_name",{},{"cluster":cluster("default",settings=DIS)})
tags=[{"key":"env","value":"prod"},{"key":"team","value":"core"}]
case("CreateCluster","tags_and_settings",{"clusterName":"tagged","tags":tags,"settings":[{"name":"containerInsights","value":"enhanced"}]},
     {"cluster":cluster("tagged",settings=[{"name":"containerInsights","value":"enhanced"}],tags=tags)})
case("CreateCluster","existing_is_returned_unchanged",{"clusterName":"prod","settings":[{"name":"containerInsights","value":"enabled"}]},
     {"cluster":cluster("prod",settings=DIS)},setup=[cc("prod")])
case("CreateCluster","fargate_capacity_providers",
     {"clusterName":"cp","capacityProviders":["FARGATE","FARGATE_SPOT"],"defaultCapacityProviderStrategy":[{"capacityProvider":"FARGATE","weight":1}]},
     {"cluster":cluster("cp",settings=DIS,cps=["FARGATE","FARGATE_SPOT"],strat=[{"capacityProvider":"FARGATE","weight":1,"base":0}])})
case("CreateCluster","wrong_type_name",{"clusterName":5},
     err("SerializationException","class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not be converted to an String"))

# ---------- DescribeClusters ----------
case("DescribeClusters","by_name",{"clusters":["prod"]},{"clusters":[cluster("prod")],"failures":[]},setup=[cc("prod")])
case("DescribeClusters","include_settings_and_tags",{"clusters":["tagged"],"include":["SETTINGS","TAGS"]},
     {"clusters":[cluster("tagged",settings=DIS,tags=tags)],"failures":[]},setup=[cc("tagged",tags=tags)])
case("DescribeClusters","missing_is_a_failure",{"clusters":["ghost"]},{"clusters":[],"failures":[{"arn":carn("ghost"),"reason":"MISSING"}]})
case("DescribeClusters","arn_and_missing_mixed",{"clusters":[carn("prod"),"ghost"]},
     {"clusters":[cluster("prod")],"failures":[{"arn":carn("ghost"),"reason":"MISSING"}]},setup=[cc("prod")])
case("DescribeClusters","no_clusters_means_default",{},{"clusters":[cluster("default")],"failures":[]},setup=[{"action":"CreateCluster","request":{}}])
case("DescribeClusters","no_clusters_default_missing",{},{"clusters":[],"failures":[{"arn":carn("default"),"reason":"MISSING"}]})
case("DescribeClusters","inactive_after_delete",{"clusters":["old"]},{"clusters":[cluster("old",status="INACTIVE")],"failures":[]},
     setup=[cc("old"),{"action":"DeleteCluster","request":{"cluster":"old"}}])
oarn=f"arn:aws:ecs:{R}:{OTHER}:cluster/prod"
case("DescribeClusters","other_account_arn_denied",{"clusters":[oarn]},
     err("AccessDeniedException",f"User: {ROOT} is not authorized to perform: ecs:DescribeClusters on resource: {oarn} because no resource-based policy allows the ecs:DescribeClusters action"))

# ---------- ListClusters ----------
case("ListClusters","empty",{},{"clusterArns":[]})
case("ListClusters","active_only",{},{"clusterArns":[carn("b"),carn("c")]},
     setup=[cc("a"),cc("b"),cc("c"),{"action":"DeleteCluster","request":{"cluster":"a"}}])
case("ListClusters","first_page",{"maxResults":2},{"clusterArns":[carn("a"),carn("b")],"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFiAAG-SkMgPnTc3wuyD_yocMuL"},setup=[cc("a"),cc("b"),cc("c")])
case("ListClusters","second_page",{"maxResults":2,"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFiAAG-SkMgPnTc3wuyD_yocMuL"},{"clusterArns":[carn("c")]},setup=[cc("a"),cc("b"),cc("c")])
case("ListClusters","max_results_zero",{"maxResults":0},err("InvalidParameterException","maxResults must be between 1 and 100."))
case("ListClusters","max_results_101",{"maxResults":101},err("InvalidParameterException","maxResults must be between 1 and 100."))
case("ListClusters","wrong_type_max_results",{"maxResults":"ten"},err("SerializationException","STRING_VALUE can not be converted to an Integer"))

# ---------- DeleteCluster ----------
case("DeleteCluster","basic",{"cluster":"prod"},{"cluster":cluster("prod",status="INACTIVE",settings=DIS)},setup=[cc("prod")])
case("DeleteCluster","by_arn",{"cluster":carn("prod")},{"cluster":cluster("prod",status="INACTIVE",settings=DIS)},setup=[cc("prod")])
case("DeleteCluster","again_returns_inactive",{"cluster":"prod"},{"cluster":cluster("prod",status="INACTIVE",settings=DIS)},
     setup=[cc("prod"),{"action":"DeleteCluster","request":{"cluster":"prod"}}])
case("DeleteCluster","not_found",{"cluster":"ghost"},err("ClusterNotFoundException","Cluster not found."))

# ---------- UpdateCluster ----------
EN=[{"name":"containerInsights","value":"enabled"}]
case("UpdateCluster","settings",{"cluster":"prod","settings":EN},{"cluster":cluster("prod",settings=EN)},setup=[cc("prod")])
case("UpdateCluster","service_connect_defaults",{"cluster":"prod","serviceConnectDefaults":{"namespace":"arn:aws:servicediscovery:us-east-1:123456789012:namespace/ns-abc"}},
     None,setup=[cc("prod")])  # skipped below
case("UpdateCluster","not_found",{"cluster":"ghost","settings":EN},err("ClusterNotFoundException","Cluster not found."))
case("UpdateCluster","deleted_cluster",{"cluster":"old","settings":EN},err("ClusterNotFoundException","Cluster not found."),
     setup=[cc("old"),{"action":"DeleteCluster","request":{"cluster":"old"}}])

# ---------- UpdateClusterSettings ----------
case("UpdateClusterSettings","enable",{"cluster":"prod","settings":EN},{"cluster":cluster("prod",settings=EN)},setup=[cc("prod")])
case("UpdateClusterSettings","enhanced_by_arn",{"cluster":carn("prod"),"settings":[{"name":"containerInsights","value":"enhanced"}]},
     {"cluster":cluster("prod",settings=[{"name":"containerInsights","value":"enhanced"}])},setup=[cc("prod")])
case("UpdateClusterSettings","not_found",{"cluster":"ghost","settings":EN},err("ClusterNotFoundException","Cluster not found."))

# ---------- PutClusterCapacityProviders ----------
case("PutClusterCapacityProviders","fargate",
     {"cluster":"prod","capacityProviders":["FARGATE","FARGATE_SPOT"],"defaultCapacityProviderStrategy":[{"capacityProvider":"FARGATE","weight":1,"base":1},{"capacityProvider":"FARGATE_SPOT","weight":4,"base":0}]},
     {"cluster":cluster("prod",settings=DIS,cps=["FARGATE","FARGATE_SPOT"],strat=[{"capacityProvider":"FARGATE","weight":1,"base":1},{"capacityProvider":"FARGATE_SPOT","weight":4,"base":0}])},setup=[cc("prod")])
case("PutClusterCapacityProviders","base_defaults_to_zero",
     {"cluster":"prod","capacityProviders":["FARGATE"],"defaultCapacityProviderStrategy":[{"capacityProvider":"FARGATE","weight":1}]},
     {"cluster":cluster("prod",settings=DIS,cps=["FARGATE"],strat=[{"capacityProvider":"FARGATE","weight":1,"base":0}])},setup=[cc("prod")])
case("PutClusterCapacityProviders","clear",
     {"cluster":"prod","capacityProviders":[],"defaultCapacityProviderStrategy":[]},
     {"cluster":cluster("prod",settings=DIS)},setup=[cc("prod",capacityProviders=["FARGATE"])])
case("PutClusterCapacityProviders","not_found",
     {"cluster":"ghost","capacityProviders":["FARGATE"],"defaultCapacityProviderStrategy":[]},err("ClusterNotFoundException","Cluster not found."))

# ---------- Task definitions ----------
def cdef(**kw):
    d={"name":"app","image":"nginx","cpu":0,"portMappings":[],"essential":True,"environment":[],"mountPoints":[],"volumesFrom":[],"systemControls":[]}
    d.update(kw); return d
def td(family,rev,cds,status="ACTIVE",ra=None,compat=None,**extra):
    t={"taskDefinitionArn":tdarn(family,rev),"containerDefinitions":cds,"family":family,"revision":rev,"volumes":[],"status":status,
       "requiresAttributes":ra or [],"placementConstraints":[],"compatibilities":compat or ["EXTERNAL","EC2"],
       "registeredAt":1.78E9,"registeredBy":ROOT}
    t.update(extra); return t
WEB={"family":"web","containerDefinitions":[{"name":"app","image":"nginx","memory":512}]}
WEBTD=lambda rev=1,**kw: td("web",rev,[cdef(memory=512)],**kw)
reg=lambda r=WEB: {"action":"RegisterTaskDefinition","request":r}
dereg=lambda ref: {"action":"DeregisterTaskDefinition","request":{"taskDefinition":ref}}

case("RegisterTaskDefinition","ec2_minimal",WEB,{"taskDefinition":WEBTD()})
case("RegisterTaskDefinition","second_revision",WEB,{"taskDefinition":WEBTD(2)},setup=[reg()])
FG={"family":"api","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512",
    "containerDefinitions":[{"name":"app","image":"nginx","portMappings":[{"containerPort":80}]}]}
FGTD=td("api",1,[cdef(portMappings=[{"containerPort":80,"hostPort":80,"protocol":"tcp"}])],
        ra=[{"name":"com.amazonaws.ecs.capability.docker-remote-api.1.18"},{"name":"ecs.capability.task-eni"}],
        compat=["EC2","FARGATE","MANAGED_INSTANCES"],networkMode="awsvpc",requiresCompatibilities=["FARGATE"],cpu="256",memory="512")
case("RegisterTaskDefinition","fargate",FG,{"taskDefinition":FGTD})
FGV=dict(FG,cpu="1 vCPU",memory="2GB",family="units")
case("RegisterTaskDefinition","fargate_units_normalized",FGV,{"taskDefinition":dict(FGTD,taskDefinitionArn=tdarn("units",1),family="units",cpu="1024",memory="2048")})
case("RegisterTaskDefinition","with_tags",dict(WEB,tags=[{"key":"env","value":"prod"}]),{"taskDefinition":WEBTD(),"tags":[{"key":"env","value":"prod"}]})
case("RegisterTaskDefinition","fargate_no_config",dict(FG,cpu="1024",memory="1024"),
     err("ClientException","No Fargate configuration exists for given values: 1024 CPU, 1024 memory. See the Amazon ECS documentation for the valid values."))
case("RegisterTaskDefinition","fargate_512_512",dict(FG,cpu="512",memory="512"),
     err("ClientException","No Fargate configuration exists for given values: 512 CPU, 512 memory. See the Amazon ECS documentation for the valid values."))
case("RegisterTaskDefinition","fargate_bridge",dict(FG,networkMode="bridge"),err("ClientException","Fargate only supports network mode \u2018awsvpc\u2019."))
fg_nocpu=dict(FG); del fg_nocpu["cpu"]
case("RegisterTaskDefinition","fargate_no_cpu",fg_nocpu,err("ClientException","Fargate requires that 'cpu' be defined at the task level."))
case("RegisterTaskDefinition","awsvpc_host_port_mismatch",
     {"family":"api","networkMode":"awsvpc","containerDefinitions":[{"name":"app","image":"nginx","memory":256,"portMappings":[{"containerPort":80,"hostPort":8080}]}]},
     err("ClientException","When networkMode=awsvpc, the host ports and container ports in port mappings must match."))
case("RegisterTaskDefinition","family_blank",{"family":"","containerDefinitions":[{"name":"app","image":"nginx","memory":512}]},err("ClientException","Family can not be blank."))
case("RegisterTaskDefinition","family_missing",{"containerDefinitions":[{"name":"app","image":"nginx","memory":512}]},err("ClientException","Family can not be blank."))
case("RegisterTaskDefinition","family_invalid_chars",{"family":"my app!","containerDefinitions":[{"name":"app","image":"nginx","memory":512}]},err("ClientException","Family contains invalid characters."))
case("RegisterTaskDefinition","image_missing",{"family":"web","containerDefinitions":[{"name":"app","memory":512}]},err("ClientException","Container.image should not be null or empty."))
case("RegisterTaskDefinition","container_name_invalid",{"family":"web","containerDefinitions":[{"name":"my app","image":"nginx","memory":512}]},err("ClientException","Container.name contains invalid characters."))
case("RegisterTaskDefinition","no_memory",{"family":"web","containerDefinitions":[{"name":"app","image":"nginx"}]},
     err("ClientException","Invalid setting for container 'app'. At least one of 'memory' or 'memoryReservation' must be specified."))
case("RegisterTaskDefinition","container_memory_over_task",{"family":"web","memory":"512","containerDefinitions":[{"name":"app","image":"nginx","memory":1024}]},
     err("ClientException","The 'memory' setting for container 'app' is greater than for the task."))
case("RegisterTaskDefinition","secrets_without_execution_role",{"family":"web","containerDefinitions":[{"name":"app","image":"nginx","memory":512,"secrets":[{"name":"DB","valueFrom":"arn:aws:ssm:us-east-1:123456789012:parameter/db"}]}]},
     err("ClientException","When you are specifying container secrets, you must also specify a value for 'executionRoleArn'."))
case("RegisterTaskDefinition","repository_credentials_without_execution_role",{"family":"web","containerDefinitions":[{"name":"app","image":"registry.example.com/app","memory":512,"repositoryCredentials":{"credentialsParameter":"arn:aws:secretsmanager:us-east-1:123456789012:secret:reg-AbCdEf"}}]},
     err("ClientException","Private repository authentication requires that the task definition specify a value for executionRoleArn."))
case("RegisterTaskDefinition","fargate_ipc_mode",dict(FG,ipcMode="host"),err("ClientException","Tasks using the Fargate launch type do not support ipcMode."))
case("RegisterTaskDefinition","hostname_with_awsvpc",{"family":"api","networkMode":"awsvpc","containerDefinitions":[{"name":"app","image":"nginx","memory":256,"hostname":"h"}]},
     err("ClientException","hostname is not supported on container when networkMode=awsvpc."))
case("RegisterTaskDefinition","wrong_type_container_definitions",{"family":"web","containerDefinitions":"nginx"},
     err("SerializationException","Start of list found where not expected"))

# DescribeTaskDefinition
case("DescribeTaskDefinition","by_family_latest",{"taskDefinition":"web"},{"taskDefinition":WEBTD(2)},setup=[reg(),reg()])
case("DescribeTaskDefinition","by_family_revision",{"taskDefinition":"web:1"},{"taskDefinition":WEBTD(1)},setup=[reg(),reg()])
case("DescribeTaskDefinition","by_arn",{"taskDefinition":tdarn("web",1)},{"taskDefinition":WEBTD(1)},setup=[reg()])
case("DescribeTaskDefinition","include_tags",{"taskDefinition":"web:1","include":["TAGS"]},{"taskDefinition":WEBTD(1),"tags":[{"key":"env","value":"prod"}]},
     setup=[reg(dict(WEB,tags=[{"key":"env","value":"prod"}]))])
case("DescribeTaskDefinition","inactive_revision",{"taskDefinition":"web:1"},{"taskDefinition":WEBTD(1,status="INACTIVE",deregisteredAt=1.78E9)},setup=[reg(),dereg("web:1")])
case("DescribeTaskDefinition","family_skips_inactive",{"taskDefinition":"web"},{"taskDefinition":WEBTD(1)},setup=[reg(),reg(),dereg("web:2")])
case("DescribeTaskDefinition","unknown_family",{"taskDefinition":"ghost"},err("ClientException","Unable to describe task definition."))
case("DescribeTaskDefinition","unknown_revision",{"taskDefinition":"web:9"},err("ClientException","Unable to describe task definition."),setup=[reg()])
case("DescribeTaskDefinition","only_inactive_revisions",{"taskDefinition":"web"},err("ClientException","Unable to describe task definition."),setup=[reg(),dereg("web:1")])
otd=f"arn:aws:ecs:{R}:{OTHER}:task-definition/web:1"
case("DescribeTaskDefinition","other_account_arn_denied",{"taskDefinition":otd},
     err("AccessDeniedException",f"User: {ROOT} is not authorized to perform: ecs:DescribeTaskDefinition on resource: {otd} because no resource-based policy allows the ecs:DescribeTaskDefinition action"))

# ListTaskDefinitions
sA=[reg(dict(WEB,family="a")),reg(dict(WEB,family="b")),reg(dict(WEB,family="a")),reg(dict(WEB,family="b")),dereg("b:1")]
case("ListTaskDefinitions","active_default",{},{"taskDefinitionArns":[tdarn("a",1),tdarn("a",2),tdarn("b",2)]},setup=sA)
case("ListTaskDefinitions","desc",{"sort":"DESC"},{"taskDefinitionArns":[tdarn("b",2),tdarn("a",2),tdarn("a",1)]},setup=sA)
case("ListTaskDefinitions","inactive",{"status":"INACTIVE"},{"taskDefinitionArns":[tdarn("b",1)]},setup=sA)
case("ListTaskDefinitions","family_prefix_exact",{"familyPrefix":"a"},{"taskDefinitionArns":[tdarn("a",1),tdarn("a",2)]},
     setup=sA+[reg(dict(WEB,family="ab"))])
case("ListTaskDefinitions","first_page",{"maxResults":2},{"taskDefinitionArns":[tdarn("a",1),tdarn("a",2)],"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFBQ1RJVkUAAWEAAQAAAAAAAAACPEue3qbkcna3GTgSdERg-Q"},setup=sA)
case("ListTaskDefinitions","second_page",{"maxResults":2,"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFBQ1RJVkUAAWEAAQAAAAAAAAACPEue3qbkcna3GTgSdERg-Q"},{"taskDefinitionArns":[tdarn("b",2)]},setup=sA)
case("ListTaskDefinitions","max_results_101",{"maxResults":101},err("InvalidParameterException","maxResults must be between 1 and 100."))
case("ListTaskDefinitions","empty",{},{"taskDefinitionArns":[]})

# ListTaskDefinitionFamilies
sF=[reg(dict(WEB,family="api")),reg(dict(WEB,family="web")),reg(dict(WEB,family="worker")),dereg("worker:1")]
case("ListTaskDefinitionFamilies","default_all",{},{"families":["api","web","worker"]},setup=sF)
case("ListTaskDefinitionFamilies","active",{"status":"ACTIVE"},{"families":["api","web"]},setup=sF)
case("ListTaskDefinitionFamilies","inactive",{"status":"INACTIVE"},{"families":["worker"]},setup=sF)
case("ListTaskDefinitionFamilies","prefix",{"familyPrefix":"w"},{"families":["web","worker"]},setup=sF)
case("ListTaskDefinitionFamilies","first_page",{"maxResults":1},{"families":["api"],"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFhcGkAAVz52hHWUSnXPG2_U1FOBDA"},setup=sF)
case("ListTaskDefinitionFamilies","second_page",{"maxResults":1,"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAFhcGkAAVz52hHWUSnXPG2_U1FOBDA"},{"families":["web"],"nextToken":"ATEyMzQ1Njc4OTAxMgABdXMtZWFzdC0xAAF3ZWIAAQQNZ4_8FO08yQh0rClA7q0"},setup=sF)
case("ListTaskDefinitionFamilies","max_results_zero",{"maxResults":0},err("InvalidParameterException","maxResults must be between 1 and 100."))

# DeregisterTaskDefinition
case("DeregisterTaskDefinition","basic",{"taskDefinition":"web:1"},{"taskDefinition":WEBTD(1,status="INACTIVE",deregisteredAt=1.78E9)},setup=[reg()])
case("DeregisterTaskDefinition","by_arn",{"taskDefinition":tdarn("web",1)},{"taskDefinition":WEBTD(1,status="INACTIVE",deregisteredAt=1.78E9)},setup=[reg()])
case("DeregisterTaskDefinition","again_returns_inactive",{"taskDefinition":"web:1"},{"taskDefinition":WEBTD(1,status="INACTIVE",deregisteredAt=1.78E9)},setup=[reg(),dereg("web:1")])
case("DeregisterTaskDefinition","unknown_revision",{"taskDefinition":"web:9"},err("ClientException","The specified task definition does not exist."),setup=[reg()])

# DeleteTaskDefinitions
case("DeleteTaskDefinitions","inactive_is_deleted",{"taskDefinitions":[tdarn("web",1)]},
     {"taskDefinitions":[WEBTD(1,status="DELETE_IN_PROGRESS",deregisteredAt=1.78E9,deleteRequestedAt=1.78E9)],"failures":[]},setup=[reg(),dereg("web:1")])
case("DeleteTaskDefinitions","active_fails",{"taskDefinitions":[tdarn("web",1)]},
     {"taskDefinitions":[],"failures":[{"arn":tdarn("web",1),"reason":"The specified task definition is still in ACTIVE status. Please deregister the target and try again."}]},setup=[reg()])
case("DeleteTaskDefinitions","unknown_fails",{"taskDefinitions":[tdarn("web",9)]},
     {"taskDefinitions":[],"failures":[{"arn":tdarn("web",9),"reason":"The specified task definition does not exist. Specify a valid account, family, revision and try again."}]},setup=[reg()])
case("DeleteTaskDefinitions","no_revision_fails",{"taskDefinitions":["web"]},
     {"taskDefinitions":[],"failures":[{"arn":"web","reason":"The specified task definition identifier is invalid. Specify a valid name or ARN and try again."}]},setup=[reg()])
case("DeleteTaskDefinitions","empty_list",{"taskDefinitions":[]},err("InvalidParameterException","size of TaskDefinition references list must be greater than 0"))
case("DeleteTaskDefinitions","eleven",{"taskDefinitions":[f"web:{i}" for i in range(1,12)]},err("InvalidParameterException","Size of TaskDefinition references list cannot exceed 10"))
case("DeleteTaskDefinitions","deleted_gone_from_describe",None,None)  # placeholder, skipped

# ---------- Tags ----------
T2=[{"key":"env","value":"prod"},{"key":"team","value":"core"}]
case("TagResource","cluster",{"resourceArn":carn("prod"),"tags":T2},{},setup=[cc("prod")])
case("TagResource","task_definition",{"resourceArn":tdarn("web",1),"tags":T2},{},setup=[reg()])
case("TagResource","cluster_not_found",{"resourceArn":carn("ghost"),"tags":T2},err("ClusterNotFoundException","Cluster not found."))
case("TagResource","invalid_arn",{"resourceArn":"arn:aws:s3:::my-bucket","tags":T2},err("InvalidParameterException","The ARN provided is invalid."))
case("TagResource","not_an_arn",{"resourceArn":"prod","tags":T2},err("InvalidParameterException","The ARN provided is invalid."))
case("TagResource","other_account_denied",{"resourceArn":oarn,"tags":T2},
     err("AccessDeniedException",f"User: {ROOT} is not authorized to perform: ecs:TagResource on resource: {oarn} because no resource-based policy allows the ecs:TagResource action"))
case("UntagResource","cluster",{"resourceArn":carn("prod"),"tagKeys":["env"]},{},setup=[cc("prod",tags=T2)])
case("UntagResource","cluster_not_found",{"resourceArn":carn("ghost"),"tagKeys":["env"]},err("ClusterNotFoundException","Cluster not found."))
case("UntagResource","invalid_arn",{"resourceArn":"arn:aws:ecr:us-east-1:123456789012:repository/app","tagKeys":["env"]},err("InvalidParameterException","The ARN provided is invalid."))
case("ListTagsForResource","cluster",{"resourceArn":carn("prod")},{"tags":T2},setup=[cc("prod",tags=T2)])
case("ListTagsForResource","cluster_after_tag_and_untag",{"resourceArn":carn("prod")},{"tags":[{"key":"team","value":"core"},{"key":"tier","value":"web"}]},
     setup=[cc("prod",tags=T2),{"action":"TagResource","request":{"resourceArn":carn("prod"),"tags":[{"key":"tier","value":"web"}]}},
            {"action":"UntagResource","request":{"resourceArn":carn("prod"),"tagKeys":["env"]}}])
case("ListTagsForResource","task_definition",{"resourceArn":tdarn("web",1)},{"tags":T2},
     setup=[reg(),{"action":"TagResource","request":{"resourceArn":tdarn("web",1),"tags":T2}}])
case("ListTagsForResource","untagged",{"resourceArn":carn("prod")},{"tags":[]},setup=[cc("prod")])
case("ListTagsForResource","cluster_not_found",{"resourceArn":carn("ghost")},err("ClusterNotFoundException","Cluster not found."))
case("ListTagsForResource","invalid_arn",{"resourceArn":"arn:aws:ecr:us-east-1:123456789012:repository/app"},err("InvalidParameterException","The ARN provided is invalid."))
case("ListTagsForResource","other_account_denied",{"resourceArn":oarn},
     err("AccessDeniedException",f"User: {ROOT} is not authorized to perform: ecs:ListTagsForResource on resource: {oarn} because no resource-based policy allows the ecs:ListTagsForResource action"))

case("DeregisterTaskDefinition","unknown_family",{"taskDefinition":"ghost:1"},err("ClientException","The specified task definition does not exist."))
case("DeregisterTaskDefinition","bare_family",{"taskDefinition":"web"},err("ClientException","__UNKNOWN_AWS_TEXT__"),setup=[reg()])
case("ListClusters","tampered_token",{"nextToken":"AAAA"},err("InvalidParameterException","__UNKNOWN_AWS_TEXT__"))
case("DescribeTaskDefinition","missing_task_definition",{},err("ClientException","__UNKNOWN_AWS_TEXT__"))
case("UpdateClusterSettings","invalid_value",{"cluster":"prod","settings":[{"name":"containerInsights","value":"on"}]},err("InvalidParameterException","__UNKNOWN_AWS_TEXT__"),setup=[cc("prod")])
case("PutClusterCapacityProviders","unknown_provider",{"cluster":"prod","capacityProviders":["nope"],"defaultCapacityProviderStrategy":[]},err("InvalidParameterException","__UNKNOWN_AWS_TEXT__"),setup=[cc("prod")])
case("CreateCluster","invalid_name",{"clusterName":"bad name!"},err("InvalidParameterException","__UNKNOWN_AWS_TEXT__"))
case("TagResource","reserved_prefix",{"resourceArn":carn("prod"),"tags":[{"key":"aws:x","value":"y"}]},err("InvalidParameterException","__UNKNOWN_AWS_TEXT__"),setup=[cc("prod")])
case("TagResource","task_definition_not_found",{"resourceArn":tdarn("ghost",1),"tags":T2},err("ClientException","__UNKNOWN_AWS_TEXT__"))
case("DescribeClusters","statistics",{"clusters":["prod"],"include":["STATISTICS"]},{"__UNKNOWN":1},setup=[cc("prod")])
case("DescribeTaskDefinition","bad_revision",{"taskDefinition":"web:abc"},err("ClientException","__UNKNOWN_AWS_TEXT__"))
case("TagResource","service_arn",{"resourceArn":f"arn:aws:ecs:{R}:{ACCT}:service/prod/web","tags":T2},err("ServiceNotFoundException","__UNKNOWN_AWS_TEXT__"))

# ---------- Unknown action ----------
case("FrobnicateCluster","unknown_operation",{},{"__type":"UnknownOperationException"})

n=0
for action,name,req,resp,setup,status in cases:
    if req is None or resp is None: continue
    d=os.path.join(OUT,action); os.makedirs(d,exist_ok=True)
    b=os.path.join(d,name)
    json.dump(req,open(b+".request.json","w"),ensure_ascii=False); open(b+".request.json","a").write("\n")
    json.dump(resp,open(b+".response.json","w"),ensure_ascii=False); open(b+".response.json","a").write("\n")
    if setup: json.dump(setup,open(b+".setup.json","w"),ensure_ascii=False); open(b+".setup.json","a").write("\n")
    if status: open(b+".status","w").write(str(status)+"\n")
    n+=1
print(n,"cases")
